"""One `Check` per fact that decides whether a GPU provider can run: the NVIDIA driver, the
onnxruntime build, each CUDA library it loads, and sherpa-onnx's build."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from voxtray.choices import Provider
from voxtray.gpu import nvml
from voxtray.gpu.builds import CUDA, missing_provider_library, ort_build_info, sherpa_build_info
from voxtray.gpu.cuda_setup import (
    Library,
    cuda_table,
    cudnn_parts,
    find_in_pip,
    linked_extras,
    load_error,
    loaded_from,
    missing_dependency,
    pip_package,
    preload_pip_libraries,
)
from voxtray.gpu.fixes import (
    ALL_CUDA_LIBRARIES,
    SHERPA_FIX,
    cpu_only_fix,
    driver_fix,
    library_fix,
    provider_library_fix,
)

DRIVER = "NVIDIA driver"
ORT_BUILD = "onnxruntime build"


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


def nvidia_driver(cuda_major: int | None = None) -> Check:
    """The NVIDIA driver's version and the CUDA version it supports, through NVML.

    Args:
        cuda_major: The CUDA major the driver must support; by default the one the
            installed onnxruntime was built for.
    """
    if cuda_major is None:
        cuda_major = ort_build_info().cuda_major
    found = nvml.driver()
    if isinstance(found, str):
        return Check(DRIVER, False, found, driver_fix(cuda_major))
    if cuda_major is not None and found.cuda_major < cuda_major:
        detail = (
            f"NVIDIA driver {found.version} supports CUDA up to {found.cuda_version}; "
            f"this onnxruntime-gpu needs CUDA {cuda_major}.x"
        )
        return Check(DRIVER, False, detail, driver_fix(cuda_major))
    return Check(DRIVER, True, f"NVIDIA driver {found.version}, supports CUDA {found.cuda_version}")


def onnxruntime_build(provider: str = Provider.CUDA) -> Check:
    """The onnxruntime package: GPU or CPU build, a conflicting pair, the CUDA it needs."""
    build = ort_build_info()
    if build.error is not None:
        detail = f"onnxruntime cannot be imported: {build.error}"
        return Check(ORT_BUILD, False, detail, cpu_only_fix())
    if len(build.installed) > 1:
        names = " ".join(entry.split()[0] for entry in build.installed)
        detail = f"{' and '.join(build.installed)} are installed together and overwrite each other"
        return Check(ORT_BUILD, False, detail, f"pip uninstall -y {names} && {ALL_CUDA_LIBRARIES}")
    listed = ", ".join(build.available)
    if CUDA not in build.available:
        detail = f"CPU-only onnxruntime: {build.package} {build.version} lists only {listed}"
        ok = provider == Provider.CPU
        return Check(ORT_BUILD, ok, detail, None if ok else cpu_only_fix())
    detail = (
        f"{build.package} {build.version} built for CUDA {build.cuda_version} and cuDNN "
        f"{build.cudnn_major}; lists {listed} (compiled in, not proof they work)"
    )
    return Check(ORT_BUILD, True, detail)


VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


def visible_devices(gpu_index: int, environ: Mapping[str, str] | None = None) -> Check | None:
    """CUDA_VISIBLE_DEVICES hiding the card: NVML still lists it (so the driver check
    passes) while CUDA sees none; None when the variable is unset or shows the card."""
    value = (os.environ if environ is None else environ).get(VISIBLE_DEVICES)
    if value is None:
        return None
    shown = 0  # CUDA takes the entries up to the first one that names no card
    for entry in value.split(","):
        if not entry.strip() or entry.strip().startswith("-"):
            break
        shown += 1
    if gpu_index < shown:
        return None
    hidden = "every card" if shown == 0 else f"card {gpu_index} (it shows {shown})"
    detail = f"{VISIBLE_DEVICES}={value!r} hides {hidden} from CUDA, though the driver sees it"
    fix = f"unset {VISIBLE_DEVICES}, or name the card: {VISIBLE_DEVICES}={gpu_index}"
    return Check(VISIBLE_DEVICES, False, detail, fix)


def provider_library(provider: str = Provider.CUDA) -> Check | None:
    """onnxruntime's own provider library for `provider`, which the Linux packages ship as
    the voxtray-cuda add-on; None when it is there or nothing GPU was asked for."""
    missing = missing_provider_library(provider)
    if missing is None:
        return None
    detail = f"the GPU provider is not installed: {missing} is missing beside onnxruntime"
    return Check(missing, False, detail, provider_library_fix())


def _library_check(library: Library, cuda_major: int) -> Check:
    name = library.name
    error = load_error(name)
    if error is None:
        where = loaded_from(name)
        detail = f"{name} ({library.purpose}) loads" + (f" from {where}" if where else "")
        return Check(name, True, detail, None, library.required)
    if pip_package(name, cuda_major) is None:  # the driver's own library
        detail = f"{name} ({library.purpose}) not found: it comes with the NVIDIA driver"
        return Check(name, False, detail, driver_fix(cuda_major), library.required)
    found = find_in_pip(name)
    if found is None:
        detail = (
            f"{name} ({library.purpose}) not found: not on the loader's path "
            "nor in pip's nvidia packages"
        )
        return Check(name, False, detail, library_fix(name, cuda_major), library.required)
    error = load_error(str(found))
    if error is None:
        return Check(name, True, f"{name} loads from {found}", None, library.required)
    dependency = missing_dependency(error) or name
    detail = f"{name} at {found} does not load: {error}"
    return Check(name, False, detail, library_fix(dependency, cuda_major), library.required)


def cuda_libraries(provider: str = Provider.CUDA) -> list[Check]:
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
    table = cuda_table(build.cuda_major, build.cudnn_major)
    table += linked_extras(provider, {library.linux for library in table})
    checks = [_library_check(library, build.cuda_major) for library in table]
    cudnn = next((c for c in checks if "cudnn" in c.name), None)
    if cudnn is not None and cudnn.ok and build.cudnn_major is not None and build.cudnn_major >= 9:
        checks += [
            _library_check(part, build.cuda_major) for part in cudnn_parts(build.cudnn_major)
        ]
    return checks


def sherpa_build() -> Check:
    """Whether the installed sherpa-onnx carries onnxruntime's CUDA provider.

    PyPI's sherpa-onnx bundles its own CPU-only onnxruntime in sherpa_onnx/lib; asked for
    CUDA it logs "Please compile with -DSHERPA_ONNX_ENABLE_GPU=ON" and runs on the CPU.
    """
    build = sherpa_build_info()
    if build is None:
        return Check("sherpa-onnx build", None, "sherpa-onnx is not installed")
    if build.cuda_providers:
        detail = (
            f"sherpa-onnx {build.version} bundles onnxruntime {build.onnxruntime} "
            f"with {build.cuda_providers[0]}"
        )
        return Check("sherpa-onnx build", True, detail)
    detail = (
        f"sherpa-onnx {build.version} is CPU-only: its onnxruntime {build.onnxruntime} in "
        f"{build.lib} has no CUDA provider, so provider='cuda' runs on the CPU"
    )
    return Check("sherpa-onnx build", False, detail, SHERPA_FIX)
