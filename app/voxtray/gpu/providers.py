"""Turn a provider request (auto, cpu, cuda, tensorrt) and a GPU index into onnxruntime's
ordered provider list."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from voxtray.choices import Provider
from voxtray.errors import ExitCode, VoxtrayError
from voxtray.gpu.builds import CPU, CUDA, TENSORRT
from voxtray.gpu.cuda_setup import preload_gpu_libraries
from voxtray.gpu.nvml import index_problem

ProviderSpec = str | tuple[str, dict[str, str]]
"""One entry of onnxruntime's `providers=`: a name, or a name with its provider options."""

_ORT_NAMES = {
    Provider.CPU: [CPU],
    Provider.CUDA: [CUDA, CPU],
    Provider.TENSORRT: [TENSORRT, CUDA, CPU],
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


def resolve_request(requested: str) -> Provider:
    """`auto` becomes cuda where an NVIDIA driver is loaded, else cpu.

    onnxruntime-gpu lists CUDA among its available providers even on machines without a
    GPU, so availability is judged by the driver, not by that list.
    """
    try:
        provider = Provider(requested)
    except ValueError:
        raise VoxtrayError(
            f"unknown provider {requested!r}; choose one of {', '.join(Provider.values())}",
            ExitCode.USAGE,
        ) from None
    if provider is Provider.AUTO:
        return Provider.CUDA if nvidia_driver_present() else Provider.CPU
    return provider


def require_gpu(gpu_index: int) -> None:
    """Refuse a GPU index beyond the cards NVML sees, rather than run on another card.

    Raises:
        VoxtrayError: one line naming the cards present (exit code USAGE).
    """
    problem = index_problem(gpu_index)
    if problem is not None:
        raise VoxtrayError(problem, ExitCode.USAGE)


def ort_providers(requested: str, gpu_index: int = 0) -> list[ProviderSpec]:
    """The ordered onnxruntime provider list for a request, CPU always last.

    GPU providers come with `device_id` set to `gpu_index`, so the session runs on that
    card.
    """
    names = _ORT_NAMES[resolve_request(requested)]
    if names[0] == CPU:
        return list(names)
    require_gpu(gpu_index)
    preload_gpu_libraries()
    device = {"device_id": str(gpu_index)}
    return [name if name == CPU else (name, dict(device)) for name in names]


def provider_name(spec: ProviderSpec) -> str:
    """The provider's name, without its options."""
    return spec if isinstance(spec, str) else spec[0]


def provider_names(specs: Sequence[ProviderSpec]) -> list[str]:
    """The providers' names, in order."""
    return [provider_name(spec) for spec in specs]
