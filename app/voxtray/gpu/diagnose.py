"""Why inference is not running on the GPU: facts read from the machine, never guesses.

The facts that decide the outcome (driver and GPUs from `nvml`, the onnxruntime and
sherpa-onnx builds from `builds` and `checks`, the CUDA libraries from `cuda_setup`) and a
real session opened while the native log is captured (`probe`) are put together here into
a one-line cause and the exact fixes, in the order to apply them.

Every function here runs on a machine without a GPU or driver and answers there instead of
raising.
"""

from __future__ import annotations

import json
import platform
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from voxtray.choices import Provider
from voxtray.gpu.builds import CPU, CUDA, ort_build_info
from voxtray.gpu.checks import (
    DRIVER,
    ORT_BUILD,
    VISIBLE_DEVICES,
    Check,
    cuda_libraries,
    nvidia_driver,
    onnxruntime_build,
    provider_library,
    sherpa_build,
    visible_devices,
)
from voxtray.gpu.cuda_setup import pip_package
from voxtray.gpu.fixes import ALL_CUDA_LIBRARIES, is_provider_library, library_fix
from voxtray.gpu.nvml import GpuInfo, gpus
from voxtray.gpu.probe import (
    ProviderProbe,
    model_precision,
    node_placement,
    session_providers,
    tiny_model,
)
from voxtray.gpu.providers import ort_providers, provider_names


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
    gpu_index: int = 0

    def to_json(self) -> str:
        """The diagnosis as indented JSON."""
        return json.dumps(asdict(self), indent=2)


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
    own = (ORT_BUILD, DRIVER, VISIBLE_DEVICES)
    libraries = [c for c in blockers if c.name not in own and not is_provider_library(c.name)]
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
    # A missing build, driver or provider add-on makes every library moot, so it comes
    # first; otherwise the session's own log is the most direct fact.
    first = blockers[0] if blockers else None
    decisive = (ORT_BUILD, DRIVER, VISIBLE_DEVICES)
    if first is not None and (first.name in decisive or is_provider_library(first.name)):
        return first.detail
    if probe.cause:
        return probe.cause
    return first.detail if first is not None else "unknown: see probe.log_lines"


def diagnose(
    provider: str = Provider.CUDA, model_path: Path | None = None, gpu_index: int = 0
) -> Diagnosis:
    """Find out whether `provider` really runs, and if not why and how to fix it.

    Args:
        provider: auto, cpu, cuda or tensorrt, as the app's --provider takes it.
        model_path: The model to probe; a one-node model when None (then no precision or
            meaningful placement is reported).
        gpu_index: The card the session is asked to run on.

    Returns:
        The facts, a real session's outcome and, for a fallback, the cause (the first
        blocker: build, then driver, then what the session logged, then libraries) and
        the fixes in the order to apply them.
    """
    specs = ort_providers(provider, gpu_index)
    requested = provider_names(specs)
    build_info = ort_build_info()
    build = onnxruntime_build(provider)
    driver = nvidia_driver(build_info.cuda_major)
    libraries = cuda_libraries(provider) if requested[0] != CPU else []
    if requested[0] != CPU:
        # Before the libraries: with either of these no library matters.
        first = [provider_library(provider), visible_devices(gpu_index)]
        libraries[:0] = [check for check in first if check is not None]
    with tempfile.TemporaryDirectory(prefix="voxtray-diagnose-") as folder:
        model = model_path or tiny_model(Path(folder))
        probe = session_providers(model, specs)
        placement = node_placement(model, specs)
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
        gpu_index=gpu_index,
    )
