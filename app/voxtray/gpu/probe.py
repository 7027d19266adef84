"""Real onnxruntime sessions: which providers a session really got and why not the one
asked for, which operators each provider took, and what precision a model's weights are.

onnxruntime-gpu lists CUDA and TensorRT among its available providers, and `get_device()`
says "GPU", on any machine, GPU or not. A session asked for CUDA that cannot have it raises
nothing: the reason goes to the native log on file descriptor 2 and the session quietly runs
on the CPU. Only `session.get_providers()` tells the truth.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx

from voxtray.gpu.builds import ort_build_info
from voxtray.gpu.native_log import (
    capture_native_stderr,
    parse_node_placement,
    parse_provider_log,
    relevant_lines,
)
from voxtray.gpu.providers import ProviderSpec, provider_names

_INT8_OPS = frozenset(
    {
        "MatMulInteger",
        "DynamicQuantizeLinear",
        "ConvInteger",
        "DynamicQuantizeMatMul",
        "MatMulIntegerToFloat",
        "QuantizeLinear",
        "DequantizeLinear",
    }
)


@dataclass(frozen=True)
class ProviderProbe:
    """What a real session did with the providers it was asked for."""

    model: str
    providers_requested: list[str]
    providers_active: list[str]
    fallback: bool
    log_lines: list[str]
    cause: str | None
    fix: str | None
    error: str | None = None


@contextlib.contextmanager
def _quiet_python() -> Iterator[io.StringIO]:
    """Collect what onnxruntime prints or warns from Python ("EP Error ... Falling back")."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        yield printed
    for warning in warned:
        printed.write(f"{warning.message}\n")


def _open_session(
    model_path: Path, providers: Sequence[ProviderSpec], options: Any = None
) -> tuple[Any, str | None]:
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(str(model_path), options, providers=list(providers))
    except Exception as exc:  # a missing or corrupt model, a provider that raises
        return None, f"{type(exc).__name__}: {exc}".splitlines()[0]
    return session, None


def session_providers(model_path: Path, requested: Sequence[ProviderSpec]) -> ProviderProbe:
    """Open a real session with `requested` providers and report what it really got.

    The native log is captured while the session is created, so the reason for a silent
    fallback is read from onnxruntime's own words. onnxruntime logs provider failures at
    WARNING and ERROR through its default logger; raising its severity above WARNING
    (`onnxruntime.set_default_logger_severity(3)`) would hide them.
    """
    import onnxruntime as ort

    with capture_native_stderr() as native, _quiet_python() as printed:
        session, error = _open_session(model_path, requested)
    active = list(session.get_providers()) if session is not None else []
    names = provider_names(requested)
    lines = relevant_lines(native.text + "\n" + printed.getvalue())
    cuda_major = ort_build_info().cuda_major
    findings = parse_provider_log(lines, names, ort.get_available_providers(), cuda_major)
    fallback = bool(active and names) and active[0] != names[0]
    causes = [f.cause for f in findings] if (fallback or error) else []
    fixes = list(dict.fromkeys(f.fix for f in findings if f.fix)) if causes else []
    return ProviderProbe(
        model=str(model_path),
        providers_requested=names,
        providers_active=active,
        fallback=fallback,
        log_lines=lines,
        cause="; ".join(causes) or None,
        fix="; ".join(fixes) or None,
        error=error,
    )


def _verbose_options(optimized: Path | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 0  # VERBOSE: the level at which the placements are logged
    if optimized is not None:
        # The optimised graph names the op types when one provider took every node;
        # weights go to a side file so models over protobuf's 2 GB limit save too.
        options.optimized_model_filepath = str(optimized)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", optimized.name + ".data"
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
    return options


def _placement_log(
    model_path: Path, providers: Sequence[ProviderSpec], optimized: Path
) -> str | None:
    for target in (optimized, None):  # providers with compiled nodes (TensorRT) cannot save
        with capture_native_stderr() as native, _quiet_python():
            session, _error = _open_session(model_path, providers, _verbose_options(target))
        if session is not None:
            return native.text
    return None


def node_placement(model_path: Path, providers: Sequence[ProviderSpec]) -> dict[str, list[str]]:
    """Op types per execution provider for `model_path`, from a verbose session log.

    Shows which operators a GPU provider left to the CPU (int8 `MatMulInteger`,
    `DynamicQuantizeLinear` under CUDA). Op types are those of the optimised graph, after
    onnxruntime's fusions.

    Returns:
        Sorted op types by provider; on a CPU-only machine everything is under
        CPUExecutionProvider. Empty when no session could be created.
    """
    with tempfile.TemporaryDirectory(prefix="voxtray-placement-") as folder:
        optimized = Path(folder) / "optimized.onnx"
        text = _placement_log(model_path, providers, optimized)
        if text is None:
            return {}
        placement, single = parse_node_placement(text.splitlines())
        if single is not None:
            source = optimized if optimized.is_file() else model_path
            with contextlib.suppress(Exception):  # a graph onnx cannot read (ORT format)
                placement = {single: sorted(_op_types(_load_graph(source)))}
        return placement


def _load_graph(model_path: Path) -> onnx.ModelProto:
    return onnx.load(str(model_path), load_external_data=False)


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """A graph and every subgraph of its If, Loop and Scan nodes."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attribute.g)
            for subgraph in attribute.graphs:
                yield from _graphs(subgraph)


def _op_types(model: onnx.ModelProto) -> set[str]:
    return {node.op_type for graph in _graphs(model.graph) for node in graph.node}


def model_precision(model_path: Path) -> str:
    """ "int8" for quantised operators, "fp16" for float16 weights, else "fp32".

    Returns "unknown" for a file that is not a readable ONNX model.
    """
    try:
        model = _load_graph(model_path)
    except Exception:  # missing file, or not protobuf
        return "unknown"
    ops = _op_types(model)
    if ops & _INT8_OPS or any(op.startswith("QLinear") for op in ops):
        return "int8"
    initializers = (tensor for graph in _graphs(model.graph) for tensor in graph.initializer)
    if any(tensor.data_type == onnx.TensorProto.FLOAT16 for tensor in initializers):
        return "fp16"
    return "fp32"


def tiny_model(folder: Path) -> Path:
    """A one-node Add model: enough for onnxruntime to create, or refuse, a provider."""
    from onnx import TensorProto, helper

    value = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in "abc"]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "add", value[:2], value[2:]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9  # readable by every onnxruntime this project allows
    path = folder / "add.onnx"
    onnx.save(model, str(path))
    return path
