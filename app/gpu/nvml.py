"""NVIDIA GPU inventory and this process's GPU memory, through NVML (nvidia-ml-py).

Every function answers "no GPU" cleanly where there is no driver, never raising.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

_lock = threading.Lock()
_state: dict[str, Any] = {}


@dataclass(frozen=True)
class GpuMemory:
    """One card: this process's memory on it and the card's real total, in MiB."""

    index: int
    name: str
    process_mb: float
    used_mb: float
    total_mb: float


def _nvml() -> Any | None:
    """The initialised pynvml module, or None with the reason kept in `unavailable_reason()`."""
    with _lock:
        if "module" in _state:
            return _state["module"]
        try:
            import pynvml

            pynvml.nvmlInit()
            _state["module"] = pynvml
        except ImportError:
            _state.update(module=None, reason="nvidia-ml-py is not installed")
        except Exception as exc:  # NVMLError subclasses, e.g. LibraryNotFound without a driver
            _state.update(module=None, reason=f"no NVIDIA driver ({exc.__class__.__name__})")
        return _state["module"]


def unavailable_reason() -> str | None:
    return None if _nvml() is not None else str(_state.get("reason"))


def gpu_memory(index: int = 0) -> GpuMemory | None:
    """Memory of card `index`, or None without a usable NVIDIA driver."""
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
        name=name.decode() if isinstance(name, bytes) else str(name),
        process_mb=mine / 2**20,
        used_mb=info.used / 2**20,
        total_mb=info.total / 2**20,
    )
