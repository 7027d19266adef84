"""The one place a `DictationPipeline` is put together: the model store lookup (installing
what is missing), the engine choice, and the VAD with its options.

The command line, the benchmark and the tray's `Dictation` all build their pipelines here,
so a model, a recogniser and a VAD are always found and combined the same way.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Protocol

from voxtray.choices import Precision, Provider
from voxtray.errors import CorruptError, DamagedModelError, NetworkError
from voxtray.gpu.failures import GpuFailure
from voxtray.gpu.providers import resolve_request
from voxtray.inference.engines import (
    EngineChoice,
    RecognizerFactory,
    create_recognizer,
    pick_precision,
)
from voxtray.inference.gpu_fallback import GpuFallbackRecognizer, failed_earlier
from voxtray.inference.pipeline import DictationPipeline
from voxtray.inference.recognizers.base import Recognizer
from voxtray.inference.vad import SileroVad, VadOptions
from voxtray.models.progress import InstallProgress, InstallStep, ProgressFn, ignore_progress
from voxtray.models.store import InstalledModel, ModelStore

Installer = Callable[[str, bool], InstalledModel]
"""Installs the named model (the bool: force a reinstall) and returns it."""
RemoteWrapper = Callable[[Callable[[], Recognizer]], Recognizer]
"""Turns the local recogniser's factory into the recogniser to use (a remote engine)."""
GpuFailureCallback = Callable[[GpuFailure], None]

log = logging.getLogger(__name__)

VAD_PRECISION = "fp32"


class VadSettings(Protocol):
    """The settings a VAD reads (`voxtray.config.Settings` has them)."""

    @property
    def vad_threshold(self) -> float: ...

    @property
    def min_silence_ms(self) -> int: ...


def vad_options(settings: VadSettings) -> VadOptions:
    """The segmenter options the settings name; the rest keep their defaults."""
    return VadOptions(threshold=settings.vad_threshold, min_silence_ms=settings.min_silence_ms)


def ensure_installed(
    store: ModelStore,
    name: str,
    *,
    install: Installer | None = None,
    refresh_stale: bool = False,
    progress: ProgressFn | None = None,
) -> InstalledModel:
    """The installed model `name`, installing it first when missing.

    Args:
        install: How to install (default: `store.install` reporting to `progress`).
        refresh_stale: Also reinstall a model an older converter built.

    Raises:
        NotFoundError: `name` is not in the catalog.
        NetworkError: `name` is not installed and cannot be fetched (a stale
            installed model is used when its refresh cannot be fetched).
    """
    model = store.get(name)
    if model is not None and not (refresh_stale and model.stale):
        return model
    store.catalog.get(name)
    try:
        if install is None:
            return store.install(name, force=model is not None, progress=progress)
        return install(name, model is not None)
    except NetworkError:
        if model is None:
            raise
        # Offline: the older conversion still works; the refresh waits for the next start.
        log.warning("%s: could not fetch the current conversion; using the installed one", name)
        return model


def load_recognizer(
    model: InstalledModel,
    choice: EngineChoice,
    *,
    warm: bool = True,
    progress: ProgressFn | None = None,
    on_gpu_failure: GpuFailureCallback | None = None,
    create: RecognizerFactory = create_recognizer,
    precision: str | None = None,
) -> Recognizer:
    """A recogniser for `model` with the engine, provider and precision `choice` resolves.
    Auto precision passes over one that "Measure on this machine" found giving wrong
    words here.

    On a GPU it is a `GpuFallbackRecognizer`: a GPU that fails later hands the same audio
    to the model on the CPU (loaded then), and `on_gpu_failure` hears why. A GPU that failed
    earlier in this process is not tried again.

    Args:
        warm: Run the warm-up so that the first real call is not the slow one.
        progress: Told when it loads the model and when it warms it up.
        create: What opens the recogniser (`create_recognizer`).
        precision: This precision, whatever `choice` and the measurements say.

    Raises:
        DamagedModelError: An installed model's file cannot be loaded (the store can
            repair it; each front end says how).
    """
    report = progress or ignore_progress
    report(InstallProgress(InstallStep.LOADING))
    provider = resolve_request(choice.provider)
    choice = dataclasses.replace(choice, precision=precision or _precision(model, choice, provider))
    on_cpu = dataclasses.replace(choice, provider=Provider.CPU)

    def make_cpu() -> Recognizer:
        return load_recognizer(model, on_cpu, create=create)

    earlier = None if provider == Provider.CPU else failed_earlier(provider, choice.gpu_index)
    if earlier is not None:
        return GpuFallbackRecognizer(
            None, make_cpu, on_gpu_failure, gpu_index=choice.gpu_index, failure=earlier
        )
    try:
        recognizer = create(model, choice)
    except CorruptError as exc:
        raise DamagedModelError(str(exc), model.name) from None
    if recognizer.provider != Provider.CPU:
        recognizer = GpuFallbackRecognizer(
            recognizer, make_cpu, on_gpu_failure, gpu_index=choice.gpu_index
        )
    if warm:
        report(InstallProgress(InstallStep.WARMING_UP))
        recognizer.warmup()
    return recognizer


def _precision(model: InstalledModel, choice: EngineChoice, provider: str) -> str:
    """The precision `choice` names; for auto, not one "Measure on this machine" found
    hearing wrong words here."""
    if choice.precision != Precision.AUTO:
        return choice.precision
    from voxtray.inference.measured_here import precisions_to_avoid

    avoid = precisions_to_avoid(model, provider)
    return (
        pick_precision(model, Precision.AUTO, provider, avoid=avoid) if avoid else choice.precision
    )


def load_vad(vad_model: InstalledModel) -> SileroVad:
    """Silero VAD from its installed model."""
    return SileroVad(vad_model.variant_files(VAD_PRECISION)["model"])


def build_pipeline(
    store: ModelStore,
    choice: EngineChoice,
    *,
    model_name: str | None = None,
    vad: VadOptions | None = None,
    install: Installer | None = None,
    refresh_stale: bool = False,
    progress: ProgressFn | None = None,
    remote: RemoteWrapper | None = None,
    on_gpu_failure: GpuFailureCallback | None = None,
    create: RecognizerFactory = create_recognizer,
) -> DictationPipeline:
    """A warmed-up pipeline for `model_name` (default: the catalog's default model).

    Both models are installed first when missing (see `ensure_installed`), so a failed
    install loads nothing. With `remote`, the recogniser is what it makes of the local
    one's factory (a remote engine that loads the local model only if it must fall back).
    `on_gpu_failure` and `create` go to `load_recognizer`.
    """

    def installed(name: str) -> InstalledModel:
        return ensure_installed(
            store, name, install=install, refresh_stale=refresh_stale, progress=progress
        )

    model = installed(model_name or store.catalog.default_stt)
    vad_model = installed(store.catalog.default_vad)

    def local(warm: bool, report: ProgressFn | None) -> Recognizer:
        return load_recognizer(
            model, choice, warm=warm, progress=report, on_gpu_failure=on_gpu_failure,
            create=create,
        )  # fmt: skip

    if remote is None:
        recognizer = local(True, progress)
    else:  # loaded only on a fall back, in the middle of a dictation: no progress then
        recognizer = remote(lambda: local(False, None))
        recognizer.warmup()
    return DictationPipeline(load_vad(vad_model), recognizer, vad)
