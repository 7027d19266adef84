"""Read CTranslate2's `model.bin` into numpy arrays, without CTranslate2 itself."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.typing import NDArray

from voxtray.errors import CorruptError

# Type ids in the order CTranslate2 writes them.
_DTYPES: tuple[np.dtype[np.generic], ...] = (
    np.dtype(np.float32),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.int32),
    np.dtype(np.float16),
)
_BFLOAT16 = 5
_SUPPORTED_BINARY_VERSIONS = range(5, 7)


class _Reader:
    def __init__(self, stream: BinaryIO, path: Path) -> None:
        self._stream = stream
        self._path = path

    def read(self, size: int) -> bytes:
        data = self._stream.read(size)
        if len(data) != size:
            raise CorruptError(f"{self._path} is truncated")
        return data

    def unpack(self, fmt: str) -> int:
        value: int = struct.unpack("<" + fmt, self.read(struct.calcsize("<" + fmt)))[0]
        return value

    def string(self) -> str:
        length = self.unpack("H")
        return self.read(length)[:-1].decode("utf-8")


def read_ct2_model(path: Path) -> tuple[str, dict[str, NDArray[np.generic]]]:
    """Load every variable of a CTranslate2 model file.

    Args:
        path: The `model.bin` file.

    Returns:
        The spec name (e.g. "WhisperSpec") and a mapping from variable name to array;
        aliases (such as a projection tied to the embeddings) appear under both names.

    Raises:
        CorruptError: The file is truncated or not a CTranslate2 model.
    """
    with path.open("rb") as stream:
        reader = _Reader(stream, path)
        version = reader.unpack("I")
        if version not in _SUPPORTED_BINARY_VERSIONS:
            raise CorruptError(f"{path} is not a CTranslate2 model (binary version {version})")
        spec_name = reader.string()
        reader.unpack("I")  # spec revision
        variables: dict[str, NDArray[np.generic]] = {}
        for _ in range(reader.unpack("I")):
            name, array = _read_variable(reader)
            variables[name] = array
        for _ in range(reader.unpack("I")):
            alias, target = reader.string(), reader.string()
            variables[alias] = variables[target]
    return spec_name, variables


def _read_variable(reader: _Reader) -> tuple[str, NDArray[np.generic]]:
    name = reader.string()
    shape = tuple(reader.unpack("I") for _ in range(reader.unpack("B")))
    type_id = reader.unpack("B")
    raw = reader.read(reader.unpack("I"))
    if type_id == _BFLOAT16:
        # bfloat16 is the upper half of a float32.
        halves = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
        return name, halves.view(np.float32).reshape(shape)
    if type_id >= len(_DTYPES):
        raise CorruptError(f"variable {name} has unknown type id {type_id}")
    return name, np.frombuffer(raw, dtype=_DTYPES[type_id]).reshape(shape)
