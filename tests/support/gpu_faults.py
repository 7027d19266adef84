"""A GPU that fails mid-session, on the CPU: the real Whisper recogniser on real onnxruntime
sessions, seen through `OrtWhisperRecognizer`'s ``session_hook``, that answer as a CUDA
session does (their providers say CUDA) and, once armed, fail as a card does.

The failures are onnxruntime's own exception type with the messages its CUDA provider
gives (out of memory in the BFC arena, a CUDA error, a lost card), or the decoder's real
output with every score NaN (an fp16 overflow, a failing card).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from voxtray.choices import Provider
from voxtray.inference.engines import (
    EngineChoice,
    RecognizerFactory,
    create_recognizer,
    pick_precision,
)
from voxtray.inference.recognizers.base import Recognizer
from voxtray.inference.recognizers.ort_whisper import OrtWhisperRecognizer, WhisperOptions
from voxtray.models.store import InstalledModel

MESSAGES = {
    "out-of-memory": (
        "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while "
        "running MatMul node. Name:'/blocks.0/attn/query/MatMul' Status Message: "
        "/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 void* "
        "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
        "onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of "
        "size 26214400"
    ),
    "cuda-error": (
        "[ONNXRuntimeError] : 1 : FAIL : CUDA failure 700: an illegal memory access was "
        "encountered ; GPU=0 ; hostname=host ; file=/onnxruntime_src/onnxruntime/core/"
        "providers/cuda/cuda_execution_provider.cc ; line=446 ; expr=cudaStreamSynchronize(s);"
    ),
    "device-lost": (
        "[ONNXRuntimeError] : 1 : FAIL : CUDA failure 46: all CUDA-capable devices are busy "
        "or unavailable ; GPU=0 ; hostname=host ; expr=cudaSetDevice(info_.device_id);"
    ),
}
NAN = "broken-output"
FAULTS = (*MESSAGES, NAN)


class Fault:
    """What the sessions do once `armed`: raise one of `MESSAGES`, or give NaN scores."""

    def __init__(self, kind: str, armed: bool = False) -> None:
        self.kind = kind
        self.armed = armed
        self.runs = 0  # runs of the faulty sessions, armed or not

    def hook(self, part: str, session: object) -> object:
        return FaultySession(session, part, self)


class FaultySession:
    """A real onnxruntime session that says it runs on CUDA and fails as its `Fault` says."""

    def __init__(self, real: object, part: str, fault: Fault) -> None:
        self._real = real
        self._part = part
        self._fault = fault

    def get_providers(self) -> list[str]:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]

    def run(
        self,
        output_names: Sequence[str] | None,
        feed: Mapping[str, object],
        options: object = None,
    ) -> list[np.ndarray]:
        from onnxruntime.capi.onnxruntime_pybind11_state import Fail

        fault = self._fault
        fault.runs += 1
        outputs: list[np.ndarray] = self._real.run(output_names, feed, options)  # type: ignore[attr-defined]
        if not fault.armed:
            return outputs
        if fault.kind in MESSAGES:
            raise Fail(MESSAGES[fault.kind])
        if self._part == "decoder":
            outputs[0] = np.full_like(outputs[0], np.nan)
        return outputs

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)


def faulty_gpu(fault: Fault) -> RecognizerFactory:
    """A recogniser factory: GPU choices get the faulty recogniser, CPU ones the real one."""

    def create(model: InstalledModel, choice: EngineChoice) -> Recognizer:
        if choice.provider == Provider.CPU:
            return create_recognizer(model, choice)
        files = model.variant_files(pick_precision(model, choice.precision, Provider.CUDA))
        return OrtWhisperRecognizer(
            files["encoder"],
            files["decoder"],
            files["tokens"],
            model=model.name,
            threads=choice.threads,
            options=WhisperOptions(language=choice.language),
            session_hook=fault.hook,
        )

    return create
