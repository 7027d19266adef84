"""The exact remedies the diagnosis names: pip commands, driver versions, library paths."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

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


PROVIDER_LIBRARY_PREFIX = ("libonnxruntime_providers_", "onnxruntime_providers_")
# Where the Linux packages put the bundle: the .deb, and install.sh's two prefixes.
_DEB_HOME = Path("/usr/lib/voxtray")
_TARBALL_HOMES = (Path.home() / ".local/lib/voxtray", Path("/usr/local/lib/voxtray"))


def is_provider_library(library: str) -> bool:
    """Whether `library` is one of onnxruntime's own GPU provider libraries."""
    name = library.lower()
    return name.startswith(PROVIDER_LIBRARY_PREFIX) and "shared" not in name


def provider_library_fix(home: Path | None = None, frozen: bool | None = None) -> str:
    """The remedy for onnxruntime's CUDA/TensorRT provider library missing beside it: the
    packages ship it as the voxtray-cuda add-on; elsewhere the install is incomplete.

    Args:
        home: The folder of the running program (default: this one's).
        frozen: Whether it is the bundle (default: whether this process is).
    """
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    if not frozen:
        return "pip install --force-reinstall onnxruntime-gpu (its provider libraries are missing)"
    home = Path(sys.executable).resolve().parent if home is None else home
    if home == _DEB_HOME:
        return "install the CUDA add-on: sudo apt-get install voxtray-cuda"
    if home in _TARBALL_HOMES:
        return (
            "install the CUDA add-on: unpack voxtray-cuda-VERSION-x86_64.tar.zst and run its "
            "install.sh (with --system for an install in /usr/local)"
        )
    return "this bundle was built without onnxruntime's CUDA provider: use the full bundle"


def library_fix(library: str, cuda_major: int | None) -> str:
    """The remedy for a missing `library`."""
    if is_provider_library(library):
        return provider_library_fix()
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
