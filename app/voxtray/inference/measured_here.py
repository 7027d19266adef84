"""What the kept measurements say about a model on this machine: the machine's and the
model's stamps a measurement is current for, and the precisions "Measure on this machine"
found hearing wrong words here, which auto then avoids.

Read by the model loader (`inference.assembly`) and by the measuring (`inference.measure`),
so neither imports the other for it."""

from __future__ import annotations

import os

from voxtray.inference.cpu import cpu_model
from voxtray.models.measurements import Fingerprint, Measurement, default_cache
from voxtray.models.store import InstalledModel


def _gpu_name() -> str:
    from voxtray.gpu.nvml import gpus

    try:
        return ", ".join(gpu.name for gpu in gpus()) or "none"
    except Exception:  # NVML's own errors vary by driver; no GPU then
        return "none"


def machine_fingerprint() -> Fingerprint:
    import onnxruntime

    return Fingerprint(
        cpu=cpu_model(),
        cores=os.cpu_count() or 1,
        onnxruntime=str(onnxruntime.__version__),
        gpu=_gpu_name(),
    )


def model_stamp(model: InstalledModel) -> str:
    """Changes when the model is reinstalled or converted anew."""
    manifest = model.manifest
    return f"{manifest.get('installed_at', '')}/{manifest.get('converter_version', '')}"


def is_current(old: Measurement | None, model: InstalledModel, fingerprint: Fingerprint) -> bool:
    return (
        old is not None and old.fingerprint == fingerprint and old.model_stamp == model_stamp(model)
    )


def wrong_here(
    model: InstalledModel,
    requested: str,
    kept: dict[str, Measurement],
    fingerprint: Fingerprint | None = None,
) -> frozenset[str]:
    """The precisions of `model` that gave wrong words when measured on this machine
    (with the provider `requested`): auto avoids them."""
    flagged = [m for m in kept.values() if m.model == model.name and m.wrong_text]
    flagged = [m for m in flagged if m.requested == requested]
    if not flagged:
        return frozenset()
    fingerprint = fingerprint or machine_fingerprint()
    return frozenset(m.precision for m in flagged if is_current(m, model, fingerprint))


def precisions_to_avoid(model: InstalledModel, requested: str) -> frozenset[str]:
    """`wrong_here` from the kept measurements file; nothing when it cannot be read."""
    return wrong_here(model, requested, default_cache().load())
