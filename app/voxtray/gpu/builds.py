"""The installed onnxruntime and sherpa-onnx: which package, built for which CUDA, carrying
which execution providers. Imports neither at import time."""

from __future__ import annotations

import contextlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"
_ORT_FLAVOURS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-directml",
    "onnxruntime-openvino",
    "onnxruntime-qnn",
    "onnxruntime-rocm",
    "onnxruntime-training",
)


@dataclass(frozen=True)
class OrtBuild:
    """The installed onnxruntime: which package, built for which CUDA and cuDNN."""

    installed: list[str]
    package: str | None
    version: str | None
    cuda_version: str | None
    cuda_major: int | None
    cudnn_major: int | None
    available: list[str]
    device: str | None
    error: str | None = None


def _installed_flavours() -> list[str]:
    import importlib.metadata  # with email, ~3 MB; the tray asks only for a self-test

    installed = []
    for name in _ORT_FLAVOURS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            installed.append(f"{name} {importlib.metadata.version(name)}")
    return installed


def _major(version: str | None) -> int | None:
    match = re.match(r"(\d+)", version or "")
    return int(match.group(1)) if match else None


def _cudnn_major(ort: Any, info: Any, cuda_major: int | None) -> int | None:
    if cuda_major is None:
        return None
    if getattr(info, "cudnn_version", None):
        return _major(str(info.cudnn_version))
    # The package's own preload list names the cuDNN it was built for (libcudnn.so.9).
    with contextlib.suppress(Exception):
        paths = ort._get_nvidia_dll_paths(False, cuda=False, cudnn=True)
        return _major(re.sub(r"^libcudnn\.so\.", "", paths[0][-1]))
    return 9 if cuda_major >= 12 else 8


def ort_build_info() -> OrtBuild:
    """Which onnxruntime package is installed and what it was built for."""
    installed = _installed_flavours()
    try:
        import onnxruntime as ort
        from onnxruntime.capi import build_and_package_info as info
    except Exception as exc:  # missing, or a broken mix of two packages in one folder
        return OrtBuild(installed, None, None, None, None, None, [], None, f"{exc}")
    cuda_version = getattr(info, "cuda_version", None) or None
    cuda_major = _major(cuda_version)
    return OrtBuild(
        installed=installed,
        package=getattr(info, "package_name", None),
        version=ort.__version__,
        cuda_version=cuda_version,
        cuda_major=cuda_major,
        cudnn_major=_cudnn_major(ort, info, cuda_major),
        available=list(ort.get_available_providers()),
        device=str(ort.get_device()),
    )


def missing_provider_library(provider: str, capi: Path | None = None) -> str | None:
    """The file name of the GPU provider library `provider` needs when it is missing from
    onnxruntime's folder (the packages ship it as an add-on); None when present or moot."""
    if provider not in ("cuda", "tensorrt", "auto"):
        return None
    if capi is None:
        spec = importlib.util.find_spec("onnxruntime")
        if spec is None or spec.origin is None:
            return None
        capi = Path(spec.origin).parent / "capi"
    pattern = (
        "onnxruntime_providers_{}.dll"
        if sys.platform == "win32"
        else "libonnxruntime_providers_{}.so"
    )
    if not (capi / pattern.format("shared")).exists():
        return None  # not a GPU build's folder: the build check says what it is
    name = pattern.format("cuda" if provider == "auto" else provider)
    return None if (capi / name).exists() else name


@dataclass(frozen=True)
class SherpaBuild:
    """The installed sherpa-onnx and the onnxruntime it bundles in sherpa_onnx/lib."""

    version: str
    onnxruntime: str
    lib: Path
    cuda_providers: list[str]


def sherpa_build_info() -> SherpaBuild | None:
    """What the installed sherpa-onnx carries; None when it is not installed."""
    try:
        import sherpa_onnx
    except ImportError:
        return None
    lib = Path(sherpa_onnx.__file__).parent / "lib"
    return SherpaBuild(
        version=getattr(sherpa_onnx, "__version__", "?"),
        onnxruntime=getattr(sherpa_onnx, "onnxruntime_version", "?"),
        lib=lib,
        cuda_providers=sorted(path.name for path in lib.glob("*onnxruntime_providers_cuda*")),
    )


def sherpa_has_cuda() -> bool:
    """Whether the installed sherpa-onnx carries onnxruntime's CUDA provider.

    PyPI's sherpa-onnx bundles a CPU-only onnxruntime: asked for CUDA it logs "Please
    compile with -DSHERPA_ONNX_ENABLE_GPU=ON" and runs on the CPU, so the provider is
    decided from this rather than believed.
    """
    build = sherpa_build_info()
    return build is not None and bool(build.cuda_providers)
