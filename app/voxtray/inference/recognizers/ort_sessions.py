"""onnxruntime sessions for Voxtray's own engines: opened with a one-line reason when a
model file is missing or broken, with thread and spinning settings, and the provider a
session really got."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from voxtray.errors import CorruptError
from voxtray.gpu.providers import ProviderSpec

SessionHook = Callable[[str, object], object]
"""Takes a session as it is opened (its part's name, the session) and returns the object the
engine runs instead, which must answer as an onnxruntime InferenceSession does."""


def session(ort: Any, path: Path, options: Any, providers: list[ProviderSpec]) -> Any:
    if not path.is_file():
        raise CorruptError(f"Whisper model file {path} is missing")
    try:
        return ort.InferenceSession(str(path), options, providers=providers)
    except Exception as exc:  # onnxruntime's own exception types (InvalidProtobuf, Fail, ...)
        reason = str(exc).splitlines()[0][:200]
        raise CorruptError(f"{path.name} is not a loadable ONNX model: {reason}") from None


def session_options(ort: Any, threads: int, spin: bool = True) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if not spin:  # idle pool threads sleep instead of busy-waiting (shared or busy CPUs)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # Memory patterns are planned and kept per input shape; here shapes rarely repeat.
    options.enable_mem_pattern = False
    return options


def provider_label(session: Any) -> str:
    """ "CUDAExecutionProvider" -> "cuda", from the providers a session really got."""
    first: str = session.get_providers()[0]
    return first.removesuffix("ExecutionProvider").lower()
