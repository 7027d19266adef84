"""The CUDA and cuDNN libraries onnxruntime's GPU providers load: their file names, the pip
packages that ship them, where pip put them, and loading them before a session is created.

Imports neither onnx nor onnxruntime at import time, so inference code can call
`preload_gpu_libraries` without pulling in the diagnosis.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import io
import os
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from voxtray.choices import Provider

WINDOWS = sys.platform == "win32"
_CUDNN_PARTS = (
    "graph",
    "ops",
    "cnn",
    "adv",
    "heuristic",
    "engines_precompiled",
    "engines_runtime_compiled",
)


@dataclass(frozen=True)
class Library:
    """A library a GPU provider loads, by its Linux soname and Windows DLL name."""

    linux: str
    windows: str
    purpose: str
    required: bool = True

    @property
    def name(self) -> str:
        """The file name on this platform."""
        return self.windows if WINDOWS else self.linux


def pip_package(library: str, cuda_major: int | None) -> str | None:
    """The pip package that ships `library` for CUDA `cuda_major`; None for the driver's own.

    From CUDA 13 NVIDIA dropped the -cuNN suffix of the toolkit packages (nvidia-cublas);
    cuDNN and TensorRT keep it (nvidia-cudnn-cu13, tensorrt-cu13-libs).
    """
    name = library.lower()
    if name.startswith(("libcuda.so", "nvcuda", "libnvidia-ml", "nvml")):
        return None
    major = cuda_major or 13
    if "nvinfer" in name or "nvonnxparser" in name:
        trt = re.search(r"(?:\.so\.|_)(\d+)", name)
        return f"tensorrt-cu{major}-libs" + (f"=={trt.group(1)}.*" if trt else "")
    if "cudnn" in name:
        return f"nvidia-cudnn-cu{major}"
    suffix = "" if major >= 13 else f"-cu{major}"
    for part, package in (
        ("cudart", "nvidia-cuda-runtime"),
        ("cublas", "nvidia-cublas"),
        ("curand", "nvidia-curand"),
        ("cufft", "nvidia-cufft"),
        ("nvrtc", "nvidia-cuda-nvrtc"),
        ("nvjitlink", "nvidia-nvjitlink"),
    ):
        if part in name:
            return package + suffix
    return None


def cuda_table(cuda: int, cudnn: int | None) -> list[Library]:
    """The libraries an onnxruntime CUDA provider built for `cuda` loads."""
    cufft = cuda - 1 if cuda >= 12 else 10  # cuFFT's soname runs one behind from CUDA 12
    table = [
        Library("libcuda.so.1", "nvcuda.dll", "NVIDIA driver"),
        Library(f"libcudart.so.{cuda}", f"cudart64_{cuda}.dll", "CUDA runtime"),
        Library(f"libcublasLt.so.{cuda}", f"cublasLt64_{cuda}.dll", "cuBLASLt"),
        Library(f"libcublas.so.{cuda}", f"cublas64_{cuda}.dll", "cuBLAS"),
        Library("libcurand.so.10", "curand64_10.dll", "cuRAND"),
    ]
    if cudnn is not None:
        table.append(Library(f"libcudnn.so.{cudnn}", f"cudnn64_{cudnn}.dll", "cuDNN"))
    return [
        *table,
        Library(f"libcufft.so.{cufft}", f"cufft64_{cufft}.dll", "cuFFT, FFT operators only", False),
        Library(f"libnvrtc.so.{cuda}", f"nvrtc64_{cuda}0_0.dll", "NVRTC, a few operators", False),
    ]


def cuda_library_names(
    cuda_major: int, cudnn_major: int | None, *, windows: bool = False
) -> list[str]:
    """The file names of the libraries a CUDA `cuda_major` build of onnxruntime loads.

    Args:
        cuda_major: The CUDA major onnxruntime was built for.
        cudnn_major: The cuDNN major it was built for, None to leave cuDNN out.
        windows: Windows DLL names (cublas64_13.dll) instead of Linux sonames.
    """
    table = cuda_table(cuda_major, cudnn_major)
    return [library.windows if windows else library.linux for library in table]


def cudnn_parts(cudnn: int) -> list[Library]:
    """cuDNN 9's sub-libraries, which libcudnn loads when first used."""
    return [
        Library(f"libcudnn_{part}.so.{cudnn}", f"cudnn_{part}64_{cudnn}.dll", f"cuDNN {part}")
        for part in _CUDNN_PARTS
    ]


_SHT_DYNAMIC = 6
_DT_NEEDED = 1


def elf_needed(path: Path) -> list[str]:
    """The libraries a 64-bit little-endian ELF file links against (its DT_NEEDED entries).

    Returns:
        The names, or an empty list for a file that is not such an ELF file.
    """
    try:
        with path.open("rb") as stream:
            header = stream.read(64)
            if header[:6] != b"\x7fELF\x02\x01":
                return []
            (offset,) = struct.unpack_from("<Q", header, 0x28)
            entry_size, count = struct.unpack_from("<HH", header, 0x3A)
            stream.seek(offset)
            table = stream.read(entry_size * count)
            sections = [
                struct.unpack_from("<IIQQQQIIQQ", table, i * entry_size) for i in range(count)
            ]
            dynamic = next(s for s in sections if s[1] == _SHT_DYNAMIC)
            strtab = sections[dynamic[6]]
            stream.seek(dynamic[4])
            entries = stream.read(dynamic[5])
            stream.seek(strtab[4])
            strings = stream.read(strtab[5])
    except (OSError, struct.error, IndexError, StopIteration):
        return []
    return [
        strings[value : strings.index(b"\0", value)].decode(errors="replace")
        for tag, value in struct.iter_unpack("<qQ", entries[: len(entries) // 16 * 16])
        if tag == _DT_NEEDED
    ]


def provider_files(provider: str) -> list[Path]:
    """onnxruntime's provider libraries that `provider` (cuda or tensorrt) loads."""
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or spec.origin is None:
        return []
    capi = Path(spec.origin).parent / "capi"
    names = ["cuda", "tensorrt"] if provider == Provider.TENSORRT else ["cuda"]
    suffix = "dll" if WINDOWS else "so"
    prefix = "" if WINDOWS else "lib"
    return [capi / f"{prefix}onnxruntime_providers_{name}.{suffix}" for name in names]


def linked_extras(provider: str, known: set[str]) -> list[Library]:
    """NVIDIA libraries the provider files link that the table does not name (TensorRT's)."""
    extras: list[Library] = []
    for path in provider_files(provider):
        for needed in elf_needed(path):
            if re.match(r"lib(nv|cu)", needed) and needed not in known:
                known.add(needed)
                windows = re.sub(r"^lib(\w+)\.so\.(\d+)$", r"\1_\2.dll", needed)
                extras.append(Library(needed, windows, f"linked by {path.name}"))
    if WINDOWS and provider == Provider.TENSORRT:  # no ELF to read; 1.2x-1.3x link TensorRT 10
        extras += [
            Library("", f"{name}_10.dll", "TensorRT") for name in ("nvinfer", "nvonnxparser")
        ]
    return extras


def _pip_library_dirs() -> list[Path]:
    """Where pip puts NVIDIA's libraries: the `nvidia` namespace and `tensorrt_libs`."""
    dirs: list[Path] = []
    for package in ("nvidia", "tensorrt_libs"):
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(package)
            if spec is not None and spec.submodule_search_locations is not None:
                dirs += [Path(location) for location in spec.submodule_search_locations]
    return dirs


def find_in_pip(name: str) -> Path | None:
    """The file `name` in pip's NVIDIA packages, or None."""
    for folder in _pip_library_dirs():
        found = next(folder.rglob(name), None)
        if found is not None:
            return found
    return None


def load_error(name: str) -> str | None:
    """None when the dynamic loader can load `name`, else its message."""
    try:
        ctypes.CDLL(name)
    except OSError as exc:
        return str(exc)
    return None


def loaded_from(name: str) -> str | None:
    """The file a loaded library came from, read from /proc/self/maps (Linux only)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6:
            base = os.path.basename(fields[5])
            if base == name or base.startswith(name + "."):
                return fields[5]
    return None


def missing_dependency(error: str) -> str | None:
    """The library a loader message says could not be opened."""
    match = re.search(r"(\S+?): cannot open shared object file", error)
    return match.group(1) if match else None


def preload_pip_libraries() -> str | None:
    """Run `onnxruntime.preload_dlls()`, which loads pip's nvidia-* libraries.

    Returns:
        What it printed (it reports each library it could not load), or None when this
        onnxruntime has no such function.
    """
    try:
        import onnxruntime as ort
    except Exception:
        return None
    if not hasattr(ort, "preload_dlls"):
        return None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.suppress(Exception):
        ort.preload_dlls()
    return printed.getvalue()


_preloaded: list[bool] = []


def preload_gpu_libraries() -> None:
    """Load pip-installed CUDA/cuDNN libraries (voxtray[cuda]) so onnxruntime finds them.

    Without this, onnxruntime only looks on the system's library path, and a machine with
    the pip packages falls back to the CPU all the same. Once per process; quiet, since the
    self-test reports what is missing.

    Also numbers CUDA devices in PCI bus order, as NVML does, unless CUDA_DEVICE_ORDER is
    already set: CUDA's default puts the fastest card first, so on a machine with two
    different cards `device_id` N and NVML's GPU N would be different cards.
    """
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    if not _preloaded:
        _preloaded.append(True)
        preload_pip_libraries()
