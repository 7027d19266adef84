"""Large lookup tables of an ONNX file, read in place from the file instead of copied.

onnxruntime copies every initializer into its own memory. A table that is only gathered
from (the decoder's token embeddings) is read a few rows per token, so mapping it from
the file and handing it to the session keeps only the pages of rows really used
resident, and those are page cache the kernel can drop. The ONNX file itself is walked
as protobuf here: importing `onnx` would cost more memory than the table saves.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# ModelProto.graph, GraphProto.initializer, and TensorProto's fields (onnx.proto3).
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_DIMS = 1
_TENSOR_DATA_TYPE = 2
_TENSOR_NAME = 8
_TENSOR_RAW_DATA = 9

# TensorProto.DataType -> numpy, for the types a lookup table has.
_DTYPES: dict[int, type[np.generic]] = {1: np.float32, 10: np.float16, 3: np.int8}


@dataclass(frozen=True)
class _Span:
    """Where a tensor's raw bytes lie in the file."""

    offset: int
    dims: tuple[int, ...]
    dtype: type[np.generic]


def _varint(buf: mmap.mmap, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: mmap.mmap, start: int, end: int) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value or (begin, end) of a length-delimited field)."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield field, wire, value
        elif wire == 2:
            length, pos = _varint(buf, pos)
            yield field, wire, (pos, pos + length)
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _tensor_span(
    buf: mmap.mmap, start: int, end: int, names: frozenset[str]
) -> tuple[str, _Span] | None:
    name, dims, data_type, raw = "", [], 0, None
    for field, wire, value in _fields(buf, start, end):
        if field == _TENSOR_NAME:
            name = bytes(buf[value[0] : value[1]]).decode("utf-8", "replace")
            if name not in names:
                return None
        elif field == _TENSOR_DIMS:
            if wire == 0:
                dims.append(value)
            else:  # packed
                pos = value[0]
                while pos < value[1]:
                    dim, pos = _varint(buf, pos)
                    dims.append(dim)
        elif field == _TENSOR_DATA_TYPE:
            data_type = value
        elif field == _TENSOR_RAW_DATA:
            raw = value
    dtype = _DTYPES.get(data_type)
    if name not in names or raw is None or dtype is None:
        return None
    if raw[1] - raw[0] != int(np.prod(dims)) * np.dtype(dtype).itemsize:
        return None
    return name, _Span(raw[0], tuple(dims), dtype)


def _spans(path: Path, names: frozenset[str]) -> dict[str, _Span]:
    found: dict[str, _Span] = {}
    with path.open("rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        for field, wire, value in _fields(buf, 0, len(buf)):
            if field != _MODEL_GRAPH or wire != 2:
                continue
            for inner, inner_wire, span in _fields(buf, value[0], value[1]):
                if inner == _GRAPH_INITIALIZER and inner_wire == 2:
                    hit = _tensor_span(buf, span[0], span[1], names)
                    if hit is not None:
                        found[hit[0]] = hit[1]
    return found


def map_initializers(ort: Any, options: Any, path: Path, names: frozenset[str]) -> list[Any]:
    """Hand `options` the initializers called `names` as views of `path`'s bytes.

    Returns the OrtValues, which must outlive the session. Names the file does not hold
    as raw data are left to onnxruntime; a file that cannot be walked is too.
    """
    try:
        spans = _spans(path, names)
    except (OSError, ValueError, IndexError):
        return []
    values = []
    for name, span in spans.items():
        # Copy-on-write: onnxruntime wants a writable buffer; it never writes to it.
        table = np.memmap(path, dtype=span.dtype, mode="c", offset=span.offset, shape=span.dims)
        value = ort.OrtValue.ortvalue_from_numpy(table)
        options.add_initializer(name, value)
        values.append(value)
    return values
