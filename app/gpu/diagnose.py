"""Why inference is not running on the GPU: facts read from the machine, never guesses.

onnxruntime-gpu lists CUDA and TensorRT among its available providers, and `get_device()`
says "GPU", on any machine, GPU or not. A session asked for CUDA that cannot have it raises
nothing: the reason goes to the native log on file descriptor 2 and the session quietly runs
on the CPU. Only `session.get_providers()` tells the truth. This module gathers every fact
that decides the outcome (driver, GPUs, the onnxruntime build, the CUDA libraries that build
loads, sherpa-onnx's build), opens a real session while capturing the native log, and turns
what was logged into a one-line cause and the exact fix.

Every function here runs on a machine without a GPU or driver and answers there instead of
raising.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import re
import struct
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import onnx

from app.gpu.native_log import capture_native_stderr
from app.inference.providers import ort_providers

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"
ALL_CUDA_LIBRARIES = 'pip install "voxtray[cuda]"'
_WINDOWS = sys.platform == "win32"
_LIBRARY_PATH_VAR = "PATH" if _WINDOWS else "LD_LIBRARY_PATH"
# The first driver branch of each CUDA major (Linux numbering; Windows drivers of the same
# branch carry the same leading number).
_MIN_DRIVER = {11: "450", 12: "525", 13: "580"}
_ORT_FLAVOURS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-directml",
    "onnxruntime-openvino",
    "onnxruntime-qnn",
    "onnxruntime-rocm",
    "onnxruntime-training",
)
_INT8_OPS = frozenset(
    {
        "MatMulInteger",
        "DynamicQuantizeLinear",
        "ConvInteger",
        "DynamicQuantizeMatMul",
        "MatMulIntegerToFloat",
        "QuantizeLinear",
        "DequantizeLinear",
    }
)
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
class Check:
    """One fact about the machine.

    Attributes:
        name: What was checked, e.g. "NVIDIA driver" or a library file name.
        ok: True when it is fine, False when it stops (or, if not `required`, limits) the
            GPU, None when it does not apply here.
        detail: One line saying what was found.
        fix: The exact remedy (a pip command, a driver version, an environment variable),
            or None.
        required: False for a library that only some operators load.
    """

    name: str
    ok: bool | None
    detail: str
    fix: str | None = None
    required: bool = True


@dataclass(frozen=True)
class GpuInfo:
    """One NVIDIA GPU as NVML reports it."""

    index: int
    name: str
    memory_total_mb: int
    compute_capability: str


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


@dataclass(frozen=True)
class Finding:
    """A cause read from a log line, with its fix; `generic` ones yield to precise ones."""

    cause: str
    fix: str | None
    provider: str | None = None
    generic: bool = False


@dataclass(frozen=True)
class ProviderProbe:
    """What a real session did with the providers it was asked for."""

    model: str
    providers_requested: list[str]
    providers_active: list[str]
    fallback: bool
    log_lines: list[str]
    cause: str | None
    fix: str | None
    error: str | None = None


@dataclass(frozen=True)
class Diagnosis:
    """Everything that decides where inference runs, with the overall cause and fix."""

    provider: str
    providers_requested: list[str]
    platform: str
    driver: Check
    gpus: list[GpuInfo]
    onnxruntime: Check
    libraries: list[Check]
    sherpa: Check
    probe: ProviderProbe
    model: str | None
    precision: str | None
    placement: dict[str, list[str]]
    fallback: bool
    cause: str | None
    fix: str | None
    fixes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """The diagnosis as indented JSON."""
        return json.dumps(asdict(self), indent=2)


# --- Fixes ---------------------------------------------------------------------------------


def driver_fix(cuda_major: int | None) -> str:
    """The driver to install for an onnxruntime built for `cuda_major`."""
    if cuda_major is None:
        return "install the NVIDIA driver"
    minimum = _MIN_DRIVER.get(cuda_major)
    newer = f" {minimum} or newer" if minimum else ""
    return f"install the NVIDIA driver{newer} (this onnxruntime-gpu needs CUDA {cuda_major}.x)"


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


def _mismatch_fix(cuda: str, cudnn: str) -> str:
    return f"install CUDA {cuda} and cuDNN {cudnn} libraries: {ALL_CUDA_LIBRARIES}"


def _cpu_only_fix() -> str | None:
    if platform.machine().lower() not in ("x86_64", "amd64") or sys.platform == "darwin":
        return None  # PyPI has no CUDA build of onnxruntime for this platform
    return f"pip uninstall -y onnxruntime onnxruntime-gpu && {ALL_CUDA_LIBRARIES}"


_SHERPA_FIX = (
    "install a CUDA build of sherpa-onnx (wheels tagged +cuda, "
    "https://k2-fsa.github.io/sherpa/onnx/cuda.html) or build it with "
    "-DSHERPA_ONNX_ENABLE_GPU=ON; the ort engine runs Whisper on CUDA without it"
)


# --- NVIDIA driver and GPUs ----------------------------------------------------------------


def _nvml_reason(pynvml: Any, exc: Exception) -> str:
    reasons = {
        pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: "its NVML library (libnvidia-ml) is not installed",
        pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "the kernel driver is not loaded",
        pynvml.NVML_ERROR_NO_PERMISSION: "no permission to open the GPU devices",
    }
    reason = reasons.get(getattr(exc, "value", None), str(exc))
    return f"{reason} ({type(exc).__name__})"


@contextlib.contextmanager
def _nvml() -> Iterator[tuple[Any | None, str]]:
    """The initialised pynvml module, or None and why; shut down again on exit."""
    try:
        import pynvml
    except ImportError:
        yield None, "nvidia-ml-py is not installed"
        return
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        yield None, _nvml_reason(pynvml, exc)
        return
    try:
        yield pynvml, ""
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def nvidia_driver(cuda_major: int | None = None) -> Check:
    """The NVIDIA driver's version and the CUDA version it supports, through NVML.

    Args:
        cuda_major: The CUDA major the driver must support; by default the one the
            installed onnxruntime was built for.
    """
    if cuda_major is None:
        cuda_major = ort_build_info().cuda_major
    with _nvml() as nvml:
        module, reason = nvml
        if module is None:
            return Check(
                "NVIDIA driver", False, f"no NVIDIA driver: {reason}", driver_fix(cuda_major)
            )
        try:
            version = _text(module.nvmlSystemGetDriverVersion())
            cuda = int(module.nvmlSystemGetCudaDriverVersion())
        except module.NVMLError as exc:
            detail = f"NVIDIA driver present but NVML failed: {exc} ({type(exc).__name__})"
            return Check("NVIDIA driver", False, detail, driver_fix(cuda_major))
    supported = f"{cuda // 1000}.{cuda % 1000 // 10}"
    if cuda_major is not None and cuda // 1000 < cuda_major:
        detail = (
            f"NVIDIA driver {version} supports CUDA up to {supported}; "
            f"this onnxruntime-gpu needs CUDA {cuda_major}.x"
        )
        return Check("NVIDIA driver", False, detail, driver_fix(cuda_major))
    return Check("NVIDIA driver", True, f"NVIDIA driver {version}, supports CUDA {supported}")


def gpus() -> list[GpuInfo]:
    """The NVIDIA GPUs NVML sees; empty without a driver."""
    found: list[GpuInfo] = []
    with _nvml() as (module, _reason):
        if module is None:
            return found
        try:
            for index in range(module.nvmlDeviceGetCount()):
                handle = module.nvmlDeviceGetHandleByIndex(index)
                major, minor = module.nvmlDeviceGetCudaComputeCapability(handle)
                total = int(module.nvmlDeviceGetMemoryInfo(handle).total) // 2**20
                name = _text(module.nvmlDeviceGetName(handle))
                found.append(GpuInfo(index, name, total, f"{major}.{minor}"))
        except module.NVMLError:  # a card that fell off the bus: report the others
            pass
    return found


# --- The onnxruntime build -----------------------------------------------------------------


def _installed_flavours() -> list[str]:
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


def onnxruntime_build(provider: str = "cuda") -> Check:
    """The onnxruntime package: GPU or CPU build, a conflicting pair, the CUDA it needs."""
    build = ort_build_info()
    name = "onnxruntime build"
    if build.error is not None:
        return Check(name, False, f"onnxruntime cannot be imported: {build.error}", _cpu_only_fix())
    if len(build.installed) > 1:
        names = " ".join(entry.split()[0] for entry in build.installed)
        detail = f"{' and '.join(build.installed)} are installed together and overwrite each other"
        return Check(name, False, detail, f"pip uninstall -y {names} && {ALL_CUDA_LIBRARIES}")
    listed = ", ".join(build.available)
    if CUDA not in build.available:
        detail = f"CPU-only onnxruntime: {build.package} {build.version} lists only {listed}"
        ok = provider == "cpu"
        return Check(name, ok, detail, None if ok else _cpu_only_fix())
    detail = (
        f"{build.package} {build.version} built for CUDA {build.cuda_version} and cuDNN "
        f"{build.cudnn_major}; lists {listed} (compiled in, not proof they work)"
    )
    return Check(name, True, detail)


# --- CUDA libraries ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Library:
    linux: str
    windows: str
    purpose: str
    required: bool = True

    @property
    def name(self) -> str:
        return self.windows if _WINDOWS else self.linux


def _cuda_table(cuda: int, cudnn: int | None) -> list[_Library]:
    """The libraries an onnxruntime CUDA provider built for `cuda` loads, by platform name."""
    cufft = cuda - 1 if cuda >= 12 else 10  # cuFFT's soname runs one behind from CUDA 12
    table = [
        _Library("libcuda.so.1", "nvcuda.dll", "NVIDIA driver"),
        _Library(f"libcudart.so.{cuda}", f"cudart64_{cuda}.dll", "CUDA runtime"),
        _Library(f"libcublasLt.so.{cuda}", f"cublasLt64_{cuda}.dll", "cuBLASLt"),
        _Library(f"libcublas.so.{cuda}", f"cublas64_{cuda}.dll", "cuBLAS"),
        _Library("libcurand.so.10", "curand64_10.dll", "cuRAND"),
    ]
    if cudnn is not None:
        table.append(_Library(f"libcudnn.so.{cudnn}", f"cudnn64_{cudnn}.dll", "cuDNN"))
    return [
        *table,
        _Library(
            f"libcufft.so.{cufft}", f"cufft64_{cufft}.dll", "cuFFT, FFT operators only", False
        ),
        _Library(f"libnvrtc.so.{cuda}", f"nvrtc64_{cuda}0_0.dll", "NVRTC, a few operators", False),
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
    table = _cuda_table(cuda_major, cudnn_major)
    return [library.windows if windows else library.linux for library in table]


def _cudnn_parts(cudnn: int) -> list[_Library]:
    # cuDNN 9 split itself into sub-libraries that libcudnn loads when first used.
    return [
        _Library(f"libcudnn_{part}.so.{cudnn}", f"cudnn_{part}64_{cudnn}.dll", f"cuDNN {part}")
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


def _provider_files(provider: str) -> list[Path]:
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or spec.origin is None:
        return []
    capi = Path(spec.origin).parent / "capi"
    names = ["cuda", "tensorrt"] if provider == "tensorrt" else ["cuda"]
    suffix = "dll" if _WINDOWS else "so"
    prefix = "" if _WINDOWS else "lib"
    return [capi / f"{prefix}onnxruntime_providers_{name}.{suffix}" for name in names]


def _linked_extras(provider: str, known: set[str]) -> list[_Library]:
    """NVIDIA libraries the provider files link that the table does not name (TensorRT's)."""
    extras: list[_Library] = []
    for path in _provider_files(provider):
        for needed in elf_needed(path):
            if re.match(r"lib(nv|cu)", needed) and needed not in known:
                known.add(needed)
                windows = re.sub(r"^lib(\w+)\.so\.(\d+)$", r"\1_\2.dll", needed)
                extras.append(_Library(needed, windows, f"linked by {path.name}"))
    if _WINDOWS and provider == "tensorrt":  # no ELF to read; 1.2x-1.3x link TensorRT 10
        extras += [
            _Library("", f"{name}_10.dll", "TensorRT") for name in ("nvinfer", "nvonnxparser")
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


def _find_in_pip(name: str) -> Path | None:
    for folder in _pip_library_dirs():
        found = next(folder.rglob(name), None)
        if found is not None:
            return found
    return None


def _load_error(name: str) -> str | None:
    """None when the dynamic loader can load `name`, else its message."""
    try:
        ctypes.CDLL(name)
    except OSError as exc:
        return str(exc)
    return None


def _loaded_from(name: str) -> str | None:
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


def _missing_dependency(error: str) -> str | None:
    match = re.search(r"(\S+?): cannot open shared object file", error)
    return match.group(1) if match else None


def _library_check(library: _Library, cuda_major: int) -> Check:
    name = library.name
    error = _load_error(name)
    if error is None:
        where = _loaded_from(name)
        detail = f"{name} ({library.purpose}) loads" + (f" from {where}" if where else "")
        return Check(name, True, detail, None, library.required)
    if pip_package(name, cuda_major) is None:  # the driver's own library
        detail = f"{name} ({library.purpose}) not found: it comes with the NVIDIA driver"
        return Check(name, False, detail, driver_fix(cuda_major), library.required)
    found = _find_in_pip(name)
    if found is None:
        detail = (
            f"{name} ({library.purpose}) not found: not on the loader's path "
            "nor in pip's nvidia packages"
        )
        return Check(name, False, detail, library_fix(name, cuda_major), library.required)
    error = _load_error(str(found))
    if error is None:
        return Check(name, True, f"{name} loads from {found}", None, library.required)
    dependency = _missing_dependency(error) or name
    detail = f"{name} at {found} does not load: {error}"
    return Check(name, False, detail, library_fix(dependency, cuda_major), library.required)


def cuda_libraries(provider: str = "cuda") -> list[Check]:
    """Whether each library the onnxruntime CUDA (or TensorRT) provider loads can be loaded.

    Calls `onnxruntime.preload_dlls()` first, as an app that uses pip's CUDA packages must,
    so libraries installed by pip count as found. Loading them stays in effect for the
    process.

    Returns:
        One check per library, named by its file name on this platform; empty for a
        CPU-only onnxruntime.
    """
    build = ort_build_info()
    if build.cuda_major is None:
        return []
    preload_pip_libraries()
    table = _cuda_table(build.cuda_major, build.cudnn_major)
    table += _linked_extras(provider, {library.linux for library in table})
    checks = [_library_check(library, build.cuda_major) for library in table]
    cudnn = next((c for c in checks if "cudnn" in c.name), None)
    if cudnn is not None and cudnn.ok and build.cudnn_major is not None and build.cudnn_major >= 9:
        checks += [
            _library_check(part, build.cuda_major) for part in _cudnn_parts(build.cudnn_major)
        ]
    return checks


# --- sherpa-onnx ---------------------------------------------------------------------------


def sherpa_build() -> Check:
    """Whether the installed sherpa-onnx carries onnxruntime's CUDA provider.

    PyPI's sherpa-onnx bundles its own CPU-only onnxruntime in sherpa_onnx/lib; asked for
    CUDA it logs "Please compile with -DSHERPA_ONNX_ENABLE_GPU=ON" and runs on the CPU.
    """
    try:
        import sherpa_onnx
    except ImportError as exc:
        return Check("sherpa-onnx build", None, f"sherpa-onnx is not installed ({exc})")
    lib = Path(sherpa_onnx.__file__).parent / "lib"
    version = getattr(sherpa_onnx, "__version__", "?")
    bundled = getattr(sherpa_onnx, "onnxruntime_version", "?")
    providers = sorted(path.name for path in lib.glob("*onnxruntime_providers_cuda*"))
    if providers:
        detail = f"sherpa-onnx {version} bundles onnxruntime {bundled} with {providers[0]}"
        return Check("sherpa-onnx build", True, detail)
    detail = (
        f"sherpa-onnx {version} is CPU-only: its onnxruntime {bundled} in {lib} has no CUDA "
        "provider, so provider='cuda' runs on the CPU"
    )
    return Check("sherpa-onnx build", False, detail, _SHERPA_FIX)


# --- Reading onnxruntime's log -------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ ")
_RELEVANT = re.compile(
    r"\[[EW]:|EP Error|Falling back|ExecutionProvider|Failed to|cannot open|LoadLibrary|"
    r"CUDA|cuDNN|CUDNN|TensorRT|SHERPA_ONNX_ENABLE_GPU"
)
_MISSING = re.compile(
    r"Failed to load library (\S+?) with error: (\S+?): cannot open shared object"
)
_SYMBOL = re.compile(
    r"Failed to load library (\S+?) with error: .*"
    r"(undefined symbol: \S+|version `[^']+' not found)"
)
_LOADLIBRARY = re.compile(
    r'LoadLibrary failed with error (\d+) "[^"]*" when trying to load "([^"]+)"'
)
_CUDA_ERROR = re.compile(r"CUDA (?:failure|error) (\w+) ?: ?([^;\n]+)")
_REQUIRE = re.compile(
    r"Failed to create (\w+)ExecutionProvider\. Require cuDNN (\S+) and CUDA (\S+?)\.?\s"
)


def relevant_lines(text: str) -> list[str]:
    """The lines of a native log that bear on providers, without colours or timestamps."""
    lines = (_TIMESTAMP.sub("", _ANSI.sub("", line)).strip() for line in text.splitlines())
    return [line for line in lines if line and _RELEVANT.search(line)]


def _provider_of(library_path: str) -> str | None:
    name = os.path.basename(library_path).lower()
    if "tensorrt" in name:
        return "TensorRT"
    return "CUDA" if "cuda" in name else None


def _missing_finding(library: str, provider: str | None, cuda_major: int | None) -> Finding:
    package = pip_package(library, cuda_major)
    if package is None:
        return Finding(f"no NVIDIA driver: {library} is missing", driver_fix(cuda_major), provider)
    if package.startswith("tensorrt"):
        return Finding(
            f"TensorRT not installed: {library} is missing",
            library_fix(library, cuda_major),
            provider,
        )
    cause = f"missing {library} (the {provider or 'GPU'} provider cannot load)"
    return Finding(cause, library_fix(library, cuda_major), provider)


def _cuda_error_finding(code: str, message: str, cuda_major: int | None) -> Finding:
    text = message.strip()
    if code in ("100", "cudaErrorNoDevice") or "no CUDA-capable device" in text:
        return Finding("no CUDA-capable GPU", "run on a machine with an NVIDIA GPU", "CUDA")
    if code in ("35", "cudaErrorInsufficientDriver") or "insufficient" in text:
        return Finding(
            f"NVIDIA driver too old for CUDA {cuda_major or ''}".strip(),
            driver_fix(cuda_major),
            "CUDA",
        )
    return Finding(f"CUDA error {code}: {text}", None, "CUDA")


def _line_finding(line: str, cuda_major: int | None) -> Finding | None:
    """The cause one log line states, if any."""
    if match := _MISSING.search(line):
        return _missing_finding(match.group(2), _provider_of(match.group(1)), cuda_major)
    if match := _SYMBOL.search(line):
        cause = f"CUDA/cuDNN version mismatch: {match.group(2)}"
        return Finding(cause, _mismatch_fix(f"{cuda_major}.x", "9.x"), _provider_of(match.group(1)))
    if match := _LOADLIBRARY.search(line):
        provider = _provider_of(match.group(2))
        library = os.path.basename(match.group(2))
        cause = f"a DLL that {library} needs is missing (LoadLibrary error {match.group(1)})"
        return Finding(cause, f"{ALL_CUDA_LIBRARIES} and {driver_fix(cuda_major)}", provider)
    if match := _CUDA_ERROR.search(line):
        return _cuda_error_finding(match.group(1), match.group(2), cuda_major)
    if "CUDNN_STATUS_VERSION_MISMATCH" in line:
        return Finding(
            "CUDA/cuDNN version mismatch: cuDNN", _mismatch_fix(f"{cuda_major}.x", "9.x"), "CUDA"
        )
    if match := _REQUIRE.search(line):
        provider, cudnn, cuda = match.groups()
        cause = (
            f"CUDA/cuDNN version mismatch: the {provider} provider needs CUDA {cuda} "
            f"and cuDNN {cudnn}"
        )
        return Finding(cause, _mismatch_fix(cuda, cudnn), provider, generic=True)
    if "Please install TensorRT libraries" in line:
        return Finding(
            "TensorRT libraries not found",
            library_fix("libnvinfer.so.10", cuda_major),
            "TensorRT",
            True,
        )
    if "SHERPA_ONNX_ENABLE_GPU" in line:
        return Finding("CPU-only sherpa-onnx build", _SHERPA_FIX, "sherpa-onnx")
    return None


def _not_built(provider: str) -> Finding:
    short = provider.removesuffix("ExecutionProvider")
    if provider == CUDA:
        cause = f"CPU-only onnxruntime build: {provider} is not compiled in"
        return Finding(cause, _cpu_only_fix(), short)
    return Finding(f"this onnxruntime build has no {provider}", _cpu_only_fix(), short)


def parse_provider_log(
    lines: Sequence[str],
    requested: Sequence[str],
    available: Sequence[str],
    cuda_major: int | None = None,
) -> list[Finding]:
    """The causes onnxruntime (or sherpa-onnx) logged for not using a requested provider.

    Args:
        lines: Log lines, e.g. from `relevant_lines`.
        requested: The providers the session was asked for, in order.
        available: `onnxruntime.get_available_providers()`.
        cuda_major: The CUDA major onnxruntime was built for, to name the right packages.

    Returns:
        Distinct findings in the order they happened. onnxruntime's catch-all "Require cuDNN
        9.* and CUDA 13.*" counts as a version mismatch only when nothing more precise was
        logged for the same provider.
    """
    findings = [_not_built(name) for name in requested if name != CPU and name not in available]
    findings += [f for f in (_line_finding(line, cuda_major) for line in lines) if f is not None]
    precise = {f.provider for f in findings if not f.generic}
    kept: dict[str, Finding] = {}
    for finding in findings:
        if not (finding.generic and finding.provider in precise):
            kept.setdefault(finding.cause, finding)
    return list(kept.values())


_PLACED = re.compile(r"(All nodes|Node\(s\)) placed on \[(\w+)\]\. Number of nodes: (\d+)")
_NODE = re.compile(r"VerifyEachNodeIsAssignedToAnEp\]\s{3,}(\w+)")


def parse_node_placement(lines: Sequence[str]) -> tuple[dict[str, list[str]], str | None]:
    """Op types per provider from onnxruntime's verbose "Node placements" report.

    Returns:
        The sorted op types per provider when nodes were split between providers, and the
        provider's name when onnxruntime said "All nodes placed on [X]" (it then lists none).
    """
    placement: dict[str, set[str]] = {}
    single: str | None = None
    current: str | None = None
    for line in lines:
        if match := _PLACED.search(line):
            current = match.group(2)
            placement.setdefault(current, set())
            single = current if match.group(1) == "All nodes" else None
        elif (match := _NODE.search(line)) and current is not None:
            placement[current].add(match.group(1))
        else:
            current = None
    return {name: sorted(ops) for name, ops in placement.items()}, single


# --- Sessions and models -------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_python() -> Iterator[io.StringIO]:
    """Collect what onnxruntime prints or warns from Python ("EP Error ... Falling back")."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        yield printed
    for warning in warned:
        printed.write(f"{warning.message}\n")


def _open_session(
    model_path: Path, providers: list[str], options: Any = None
) -> tuple[Any, str | None]:
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(str(model_path), options, providers=providers)
    except Exception as exc:  # a missing or corrupt model, a provider that raises
        return None, f"{type(exc).__name__}: {exc}".splitlines()[0]
    return session, None


def session_providers(model_path: Path, requested: list[str]) -> ProviderProbe:
    """Open a real session with `requested` providers and report what it really got.

    The native log is captured while the session is created, so the reason for a silent
    fallback is read from onnxruntime's own words. onnxruntime logs provider failures at
    WARNING and ERROR through its default logger; raising its severity above WARNING
    (`onnxruntime.set_default_logger_severity(3)`) would hide them.
    """
    import onnxruntime as ort

    with capture_native_stderr() as native, _quiet_python() as printed:
        session, error = _open_session(model_path, requested)
    active = list(session.get_providers()) if session is not None else []
    lines = relevant_lines(native.text + "\n" + printed.getvalue())
    cuda_major = ort_build_info().cuda_major
    findings = parse_provider_log(lines, requested, ort.get_available_providers(), cuda_major)
    fallback = bool(active and requested) and active[0] != requested[0]
    causes = [f.cause for f in findings] if (fallback or error) else []
    fixes = list(dict.fromkeys(f.fix for f in findings if f.fix)) if causes else []
    return ProviderProbe(
        model=str(model_path),
        providers_requested=list(requested),
        providers_active=active,
        fallback=fallback,
        log_lines=lines,
        cause="; ".join(causes) or None,
        fix="; ".join(fixes) or None,
        error=error,
    )


def _verbose_options(optimized: Path | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 0  # VERBOSE: the level at which the placements are logged
    if optimized is not None:
        # The optimised graph names the op types when one provider took every node;
        # weights go to a side file so models over protobuf's 2 GB limit save too.
        options.optimized_model_filepath = str(optimized)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", optimized.name + ".data"
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
    return options


def _placement_log(model_path: Path, providers: list[str], optimized: Path) -> str | None:
    for target in (optimized, None):  # providers with compiled nodes (TensorRT) cannot save
        with capture_native_stderr() as native, _quiet_python():
            session, _error = _open_session(model_path, providers, _verbose_options(target))
        if session is not None:
            return native.text
    return None


def node_placement(model_path: Path, providers: list[str]) -> dict[str, list[str]]:
    """Op types per execution provider for `model_path`, from a verbose session log.

    Shows which operators a GPU provider left to the CPU (int8 `MatMulInteger`,
    `DynamicQuantizeLinear` under CUDA). Op types are those of the optimised graph, after
    onnxruntime's fusions.

    Returns:
        Sorted op types by provider; on a CPU-only machine everything is under
        CPUExecutionProvider. Empty when no session could be created.
    """
    with tempfile.TemporaryDirectory(prefix="voxtray-placement-") as folder:
        optimized = Path(folder) / "optimized.onnx"
        text = _placement_log(model_path, providers, optimized)
        if text is None:
            return {}
        placement, single = parse_node_placement(text.splitlines())
        if single is not None:
            source = optimized if optimized.is_file() else model_path
            with contextlib.suppress(Exception):  # a graph onnx cannot read (ORT format)
                placement = {single: sorted(_op_types(_load_graph(source)))}
        return placement


def _load_graph(model_path: Path) -> onnx.ModelProto:
    return onnx.load(str(model_path), load_external_data=False)


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """A graph and every subgraph of its If, Loop and Scan nodes."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attribute.g)
            for subgraph in attribute.graphs:
                yield from _graphs(subgraph)


def _op_types(model: onnx.ModelProto) -> set[str]:
    return {node.op_type for graph in _graphs(model.graph) for node in graph.node}


def model_precision(model_path: Path) -> str:
    """ "int8" for quantised operators, "fp16" for float16 weights, else "fp32".

    Returns "unknown" for a file that is not a readable ONNX model.
    """
    try:
        model = _load_graph(model_path)
    except Exception:  # missing file, or not protobuf
        return "unknown"
    ops = _op_types(model)
    if ops & _INT8_OPS or any(op.startswith("QLinear") for op in ops):
        return "int8"
    initializers = (tensor for graph in _graphs(model.graph) for tensor in graph.initializer)
    if any(tensor.data_type == onnx.TensorProto.FLOAT16 for tensor in initializers):
        return "fp16"
    return "fp32"


def _tiny_model(folder: Path) -> Path:
    """A one-node Add model: enough for onnxruntime to create, or refuse, a provider."""
    from onnx import TensorProto, helper

    value = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in "abc"]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "add", value[:2], value[2:]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9  # readable by every onnxruntime this project allows
    path = folder / "add.onnx"
    onnx.save(model, str(path))
    return path


# --- Putting it together -------------------------------------------------------------------


def _library_fixes(missing: list[Check], cuda_major: int | None) -> list[str]:
    """One pip command for the missing CUDA and cuDNN libraries, and TensorRT's own fix."""
    packages = {c.name: pip_package(c.name, cuda_major) for c in missing}
    cuda = {name: p for name, p in packages.items() if p and not p.startswith("tensorrt")}
    fixes = []
    if cuda:
        names, single = ", ".join(cuda), " ".join(dict.fromkeys(cuda.values()))
        fixes.append(f"{ALL_CUDA_LIBRARIES} (missing {names}; or: pip install {single})")
    tensorrt = [name for name, p in packages.items() if p and p.startswith("tensorrt")]
    if tensorrt:
        fixes.append(library_fix(tensorrt[0], cuda_major))
    return fixes


def _fixes(blockers: list[Check], probe: ProviderProbe, cuda_major: int | None) -> list[str]:
    libraries = [c for c in blockers if c.name not in ("onnxruntime build", "NVIDIA driver")]
    fixes = [c.fix for c in blockers if c not in libraries and c.fix]
    fixes += _library_fixes(libraries, cuda_major) or ([probe.fix] if probe.fix else [])
    return list(dict.fromkeys(fixes))


def _notes(
    probe: ProviderProbe, precision: str | None, placement: dict[str, list[str]]
) -> list[str]:
    notes = []
    if probe.fallback and CUDA in probe.providers_requested:
        notes.append(
            "onnxruntime-gpu lists CUDA and TensorRT as available and get_device() says GPU on "
            "any machine; only session.get_providers() shows where a session runs"
        )
    if precision == "int8" and probe.providers_requested[0] != CPU:
        notes.append(
            "int8 model: CUDA has no kernels for MatMulInteger/DynamicQuantizeLinear, so those "
            "nodes run on the CPU with copies between; int8 under CUDA is often slower than "
            "on the CPU alone; use an fp32 or fp16 model on a GPU"
        )
    if len(placement) > 1 and placement.get(CPU):
        notes.append(f"op types left on the CPU: {', '.join(placement[CPU])}")
    return notes


def _blockers(
    build: Check, driver: Check, libraries: list[Check], requested: list[str]
) -> list[Check]:
    if requested[0] == CPU:
        return []
    checks = [build, driver, *(c for c in libraries if c.required)]
    return [c for c in checks if c.ok is False]


def _overall_cause(blockers: list[Check], probe: ProviderProbe) -> str:
    # A missing build or driver makes every library moot, so it comes first; otherwise the
    # session's own log is the most direct fact.
    first = blockers[0] if blockers else None
    if first is not None and first.name in ("onnxruntime build", "NVIDIA driver"):
        return first.detail
    if probe.cause:
        return probe.cause
    return first.detail if first is not None else "unknown: see probe.log_lines"


def diagnose(provider: str = "cuda", model_path: Path | None = None) -> Diagnosis:
    """Find out whether `provider` really runs, and if not why and how to fix it.

    Args:
        provider: auto, cpu, cuda or tensorrt, as the app's --provider takes it.
        model_path: The model to probe; a one-node model when None (then no precision or
            meaningful placement is reported).

    Returns:
        The facts, a real session's outcome and, for a fallback, the cause (the first
        blocker: build, then driver, then what the session logged, then libraries) and
        the fixes in the order to apply them.
    """
    requested = ort_providers(provider)
    build_info = ort_build_info()
    build = onnxruntime_build(provider)
    driver = nvidia_driver(build_info.cuda_major)
    libraries = cuda_libraries(provider) if requested[0] != CPU else []
    with tempfile.TemporaryDirectory(prefix="voxtray-diagnose-") as folder:
        model = model_path or _tiny_model(Path(folder))
        probe = session_providers(model, requested)
        placement = node_placement(model, requested)
        precision = model_precision(model) if model_path is not None else None
    blockers = _blockers(build, driver, libraries, requested)
    failed = probe.fallback or probe.error is not None
    cause = _overall_cause(blockers, probe) if failed else None
    fixes = _fixes(blockers, probe, build_info.cuda_major) if failed else []
    return Diagnosis(
        provider=provider,
        providers_requested=requested,
        platform=f"{platform.system()} {platform.machine()}",
        driver=driver,
        gpus=gpus(),
        onnxruntime=build,
        libraries=libraries,
        sherpa=sherpa_build(),
        probe=probe,
        model=str(model_path) if model_path is not None else None,
        precision=precision,
        placement=placement,
        fallback=probe.fallback,
        cause=cause,
        fix="; then ".join(fixes) or None,
        fixes=fixes,
        notes=_notes(probe, precision, placement),
    )
