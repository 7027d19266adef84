"""The exact remedies the diagnosis names: pip commands, driver versions, library paths."""

from __future__ import annotations

import platform
import sys

from voxtray.gpu.cuda_setup import WINDOWS, pip_package

ALL_CUDA_LIBRARIES = 'pip install "voxtray[cuda]"'
SHERPA_FIX = (
    "install a CUDA build of sherpa-onnx (wheels tagged +cuda, "
    "https://k2-fsa.github.io/sherpa/onnx/cuda.html) or build it with "
    "-DSHERPA_ONNX_ENABLE_GPU=ON; the ort engine runs Whisper on CUDA without it"
)
_LIBRARY_PATH_VAR = "PATH" if WINDOWS else "LD_LIBRARY_PATH"
# The first driver branch of each CUDA major (Linux numbering; Windows drivers of the same
# branch carry the same leading number).
_MIN_DRIVER = {11: "450", 12: "525", 13: "580"}


def driver_fix(cuda_major: int | None) -> str:
    """The driver to install for an onnxruntime built for `cuda_major`."""
    if cuda_major is None:
        return "install the NVIDIA driver"
    minimum = _MIN_DRIVER.get(cuda_major)
    newer = f" {minimum} or newer" if minimum else ""
    return f"install the NVIDIA driver{newer} (this onnxruntime-gpu needs CUDA {cuda_major}.x)"


def library_fix(library: str, cuda_major: int | None) -> str:
    """The remedy for a missing `library`."""
    package = pip_package(library, cuda_major)
    if package is None:
        return driver_fix(cuda_major)
    if getattr(sys, "frozen", False):
        # A bundle has no pip: the libraries must come from the system.
        major = cuda_major or "the matching"
        return (
            f"install CUDA {major} and cuDNN 9 (NVIDIA's packages for your distribution) so "
            f"{library} is on the library path, or set {_LIBRARY_PATH_VAR} to its folder"
        )
    if package.startswith("tensorrt"):
        return f'pip install "{package}" and add its tensorrt_libs folder to {_LIBRARY_PATH_VAR}'
    return f"{ALL_CUDA_LIBRARIES} (or just: pip install {package})"


def mismatch_fix(cuda: str, cudnn: str) -> str:
    """The remedy for libraries of another CUDA or cuDNN version."""
    return f"install CUDA {cuda} and cuDNN {cudnn} libraries: {ALL_CUDA_LIBRARIES}"


def cpu_only_fix() -> str | None:
    """The remedy for a CPU-only onnxruntime, None where PyPI has no CUDA build."""
    if platform.machine().lower() not in ("x86_64", "amd64") or sys.platform == "darwin":
        return None
    return f"pip uninstall -y onnxruntime onnxruntime-gpu && {ALL_CUDA_LIBRARIES}"
