"""What went wrong when a GPU that loaded fails later, while transcribing: out of memory, a
CUDA error, a card that is gone, or output that cannot be text (NaN scores, `<unk>` soup).

onnxruntime reports all of these as one exception type with CUDA's own words inside
("CUDA failure 2: out of memory", "BFCArena ... Failed to allocate memory", "CUDA failure
999: unknown error", "GPU has fallen off the bus"); `classify` reads them into a cause and
a fix the user can act on.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class BrokenOutput(RuntimeError):
    """The model's output cannot be text: scores that are not numbers (NaN, infinite).

    A CPU that gives them runs a broken model; a GPU that gives them (fp16 overflow, a
    failing card) is worth a retry on the CPU.
    """


class FailureKind(enum.StrEnum):
    OUT_OF_MEMORY = "out-of-memory"
    DEVICE_LOST = "device-lost"
    CUDA_ERROR = "cuda-error"
    BROKEN_OUTPUT = "broken-output"
    OTHER = "failed"


@dataclass(frozen=True)
class GpuFailure:
    """A GPU that failed mid-session.

    Attributes:
        kind: What kind of failure.
        provider: The provider that failed ("cuda", "tensorrt").
        cause: One line: what happened, in onnxruntime's or CUDA's words where it gave some.
        fix: The remedy.
    """

    kind: FailureKind
    provider: str
    cause: str
    fix: str

    def line(self) -> str:
        """One line for the tray, the HUD and `status`."""
        return f"{self.provider} failed ({self.cause}); running on the CPU"

    def to_json(self) -> dict[str, str]:
        return {"kind": str(self.kind), "provider": self.provider, "cause": self.cause,
                "fix": self.fix}  # fmt: skip


_RESTART = "restart Voxtray to use the GPU again"
FIXES = {
    FailureKind.OUT_OF_MEMORY: (
        "free memory on the card (`nvidia-smi` lists what holds it) or choose a smaller "
        f"model; {_RESTART}"
    ),
    FailureKind.DEVICE_LOST: (
        f"check the card with `nvidia-smi` and the kernel log (`sudo dmesg | grep -i xid`); "
        f"{_RESTART} once it is back"
    ),
    FailureKind.CUDA_ERROR: (
        f"run the GPU self-test with the cuda provider and check the driver; {_RESTART}"
    ),
    FailureKind.BROKEN_OUTPUT: (
        "run the GPU self-test; an fp16 or converted model that is broken on the GPU "
        f"needs the fp32 one; {_RESTART}"
    ),
    FailureKind.OTHER: f"run the GPU self-test with the cuda provider; {_RESTART}",
}

# CUDA runtime error numbers and library statuses, in the words onnxruntime quotes them.
_OUT_OF_MEMORY = re.compile(
    r"out of memory|failed to allocate|cudaErrorMemoryAllocation|CUDA failure 2\b|"
    r"CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|CUDA_ERROR_OUT_OF_MEMORY",
    re.IGNORECASE,
)
_DEVICE_LOST = re.compile(
    r"fallen off the bus|unspecified launch failure|cudaErrorLaunchFailure|"
    r"devices? (is|are) (busy or )?unavailable|cudaErrorDevicesUnavailable|"
    r"no CUDA-capable device|cudaErrorNoDevice|CUDA failure (46|100|101|214|719|999)\b|"
    r"uncorrectable ECC|device lost|CUDA_ERROR_DEVICE_UNAVAILABLE",
    re.IGNORECASE,
)
_CUDA = re.compile(r"\bCUDA\b|cuda[A-Z]\w+|CUBLAS|CUDNN|cuFFT|TensorRT|NVRTC", re.IGNORECASE)
_NOISE = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : |Non-zero status code returned while ")


def classify(error: BaseException, provider: str) -> GpuFailure:
    """The failure ``error`` (raised by a transcription on ``provider``) stands for."""
    if isinstance(error, BrokenOutput):
        kind = FailureKind.BROKEN_OUTPUT
        return GpuFailure(kind, provider, f"output that cannot be text: {error}", FIXES[kind])
    message = " ".join(str(error).split())
    if _OUT_OF_MEMORY.search(message):
        kind = FailureKind.OUT_OF_MEMORY
        cause = f"out of GPU memory: {_quoted(message)}"
    elif _DEVICE_LOST.search(message):
        kind = FailureKind.DEVICE_LOST
        cause = f"the GPU was lost: {_quoted(message)}"
    elif _CUDA.search(message):
        kind = FailureKind.CUDA_ERROR
        cause = f"CUDA error: {_quoted(message)}"
    else:
        kind = FailureKind.OTHER
        cause = f"{type(error).__name__}: {_quoted(message)}" if message else type(error).__name__
    return GpuFailure(kind, provider, cause, FIXES[kind])


def garbage(text: str) -> str | None:
    """Why a transcript cannot be speech (`<unk>` tokens, a run of symbols), or None."""
    if "<unk>" in text.lower():
        return "the text holds <unk> tokens"
    shown = text.strip()
    if len(shown) >= 8 and not any(char.isalnum() for char in shown):
        return f"the text is symbols only ({shown[:20]!r})"
    return None


def _quoted(message: str) -> str:
    """onnxruntime's message without its prefix, cut to a line's length."""
    cleaned = _NOISE.sub("", message)
    return cleaned[:160] + ("..." if len(cleaned) > 160 else "")
