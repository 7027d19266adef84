"""Turn a provider request (auto, cpu, cuda, tensorrt) into onnxruntime's ordered list."""

from __future__ import annotations

import sys
from pathlib import Path

from app.errors import ExitCode, VoxtrayError

PROVIDER_CHOICES = ("auto", "cpu", "cuda", "tensorrt")
_ORT_NAMES = {
    "cpu": ["CPUExecutionProvider"],
    "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
}


def nvidia_driver_present() -> bool:
    """A loaded NVIDIA kernel driver (Linux) or its management library (elsewhere)."""
    if sys.platform.startswith("linux"):
        return Path("/proc/driver/nvidia/version").exists()
    try:
        import ctypes.util

        return ctypes.util.find_library("nvidia-ml") is not None
    except OSError:
        return False


def resolve_request(requested: str) -> str:
    """`auto` becomes cuda where an NVIDIA driver is loaded, else cpu.

    onnxruntime-gpu lists CUDA among its available providers even on machines without a
    GPU, so availability is judged by the driver, not by that list.
    """
    if requested not in PROVIDER_CHOICES:
        raise VoxtrayError(
            f"unknown provider {requested!r}; choose one of {', '.join(PROVIDER_CHOICES)}",
            ExitCode.USAGE,
        )
    if requested == "auto":
        return "cuda" if nvidia_driver_present() else "cpu"
    return requested


def ort_providers(requested: str) -> list[str]:
    """The ordered onnxruntime provider list for a request, CPU always last."""
    providers = list(_ORT_NAMES[resolve_request(requested)])
    if providers[0] != "CPUExecutionProvider":
        preload_gpu_libraries()
    return providers


_preloaded: list[bool] = []


def preload_gpu_libraries() -> None:
    """Load pip-installed CUDA/cuDNN libraries (voxtray[cuda]) so onnxruntime finds them.

    Without this, onnxruntime only looks on the system's library path, and a machine with
    the pip packages falls back to the CPU all the same. Once per process; quiet, since the
    self-test reports what is missing.
    """
    if not _preloaded:
        _preloaded.append(True)
        from app.gpu.diagnose import preload_pip_libraries

        preload_pip_libraries()
