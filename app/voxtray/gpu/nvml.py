"""The NVIDIA driver, its GPUs and this process's GPU memory, through NVML (nvidia-ml-py).

NVML is initialised once per process and left open. Every function answers "no GPU"
cleanly where there is no driver, never raising.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

_lock = threading.Lock()
_state: dict[str, Any] = {}


@dataclass(frozen=True)
class Driver:
    """The loaded NVIDIA driver."""

    version: str
    cuda: int  # NVML's number: 13000 is CUDA 13.0

    @property
    def cuda_major(self) -> int:
        return self.cuda // 1000

    @property
    def cuda_version(self) -> str:
        """The newest CUDA version the driver supports, e.g. "13.0"."""
        return f"{self.cuda // 1000}.{self.cuda % 1000 // 10}"


@dataclass(frozen=True)
class GpuInfo:
    """One NVIDIA GPU as NVML reports it."""

    index: int
    name: str
    memory_total_mb: int
    compute_capability: str


@dataclass(frozen=True)
class GpuMemory:
    """One card: this process's memory on it and the card's real total, in MiB."""

    index: int
    name: str
    process_mb: float
    used_mb: float
    total_mb: float


def _reason(pynvml: Any, exc: Exception) -> str:
    reasons = {
        pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: "its NVML library (libnvidia-ml) is not installed",
        pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "the kernel driver is not loaded",
        pynvml.NVML_ERROR_NO_PERMISSION: "no permission to open the GPU devices",
    }
    reason = reasons.get(getattr(exc, "value", None), str(exc))
    return f"{reason} ({type(exc).__name__})"


def _nvml() -> Any | None:
    """The initialised pynvml module, or None with the reason kept in `unavailable_reason()`."""
    with _lock:
        if "module" in _state:
            return _state["module"]
        try:
            import pynvml
        except ImportError:
            _state.update(module=None, reason="nvidia-ml-py is not installed")
            return None
        try:
            pynvml.nvmlInit()
            _state["module"] = pynvml
        except Exception as exc:  # NVMLError subclasses, e.g. LibraryNotFound without a driver
            _state.update(module=None, reason=_reason(pynvml, exc))
        return _state["module"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def unavailable_reason() -> str | None:
    """Why NVML cannot be used (no driver, no nvidia-ml-py), or None when it can."""
    return None if _nvml() is not None else str(_state.get("reason"))


def driver() -> Driver | str:
    """The driver's version and the CUDA version it supports, or one line saying why not."""
    nvml = _nvml()
    if nvml is None:
        return f"no NVIDIA driver: {unavailable_reason()}"
    try:
        version = _text(nvml.nvmlSystemGetDriverVersion())
        return Driver(version, int(nvml.nvmlSystemGetCudaDriverVersion()))
    except nvml.NVMLError as exc:
        return f"NVIDIA driver present but NVML failed: {exc} ({type(exc).__name__})"


def gpu_count() -> int:
    """How many NVIDIA GPUs NVML sees; 0 without a driver."""
    nvml = _nvml()
    if nvml is None:
        return 0
    try:
        return int(nvml.nvmlDeviceGetCount())
    except nvml.NVMLError:
        return 0


def gpus() -> list[GpuInfo]:
    """The NVIDIA GPUs NVML sees; empty without a driver."""
    nvml = _nvml()
    found: list[GpuInfo] = []
    if nvml is None:
        return found
    try:
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            total = int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // 2**20
            name = _text(nvml.nvmlDeviceGetName(handle))
            found.append(GpuInfo(index, name, total, f"{major}.{minor}"))
    except nvml.NVMLError:  # a card that fell off the bus: report the others
        pass
    return found


def index_problem(index: int, count: int | None = None) -> str | None:
    """One line saying GPU `index` is not among the cards present, or None when it is.

    Args:
        index: The GPU index a setting or flag names.
        count: The number of GPUs present; by default NVML's count. Without a driver
            nothing can be judged and the answer is None.
    """
    present = gpu_count() if count is None else count
    if present == 0 or 0 <= index < present:
        return None
    cards = "1 NVIDIA GPU (index 0)" if present == 1 else f"{present} NVIDIA GPUs (0-{present - 1})"
    return f"GPU index {index} does not exist: this machine has {cards}"


def gpu_memory(index: int = 0) -> GpuMemory | None:
    """Memory of card `index`, or None without a usable NVIDIA driver or such a card."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        info = nvml.nvmlDeviceGetMemoryInfo(handle)
        name = nvml.nvmlDeviceGetName(handle)
        mine = 0
        for process in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if process.pid == os.getpid() and process.usedGpuMemory is not None:
                mine += process.usedGpuMemory
    except Exception:  # the card went away, or the index does not exist
        return None
    return GpuMemory(
        index=index,
        name=_text(name),
        process_mb=mine / 2**20,
        used_mb=info.used / 2**20,
        total_mb=info.total / 2**20,
    )
