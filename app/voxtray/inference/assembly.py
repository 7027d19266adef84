"""The one place a `DictationPipeline` is put together: the model store lookup (installing
what is missing), the engine choice, and the VAD with its options.

The command line, the benchmark and the tray's `Dictation` all build their pipelines here,
so a model, a recogniser and a VAD are always found and combined the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from voxtray.choices import Precision
from voxtray.errors import CorruptError, NetworkError, repair_hint
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.pipeline import DictationPipeline
from voxtray.inference.providers import resolve_request
from voxtray.inference.recognizers.base import Recognizer
from voxtray.inference.vad import SileroVad, VadOptions
from voxtray.models.store import InstalledModel, ModelStore, ProgressFn

Installer = Callable[[str, bool], InstalledModel]
RemoteWrapper = Callable[[Callable[[], Recognizer]], Recognizer]
"""Turns the local recogniser's factory into the recogniser to use (a remote engine)."""
"""Installs the named model (the bool: force a reinstall) and returns it."""

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
    precision: str | None = None,
) -> Recognizer:
    """A recogniser for `model` with the engine, provider and precision `choice` resolves.
    Auto precision passes over one that "Measure on this machine" found giving wrong
    words here.

    Args:
        warm: Run the warm-up so that the first real call is not the slow one.
        progress: Told "loading model" and "warming up".
        precision: This precision, whatever `choice` and the measurements say.

    Raises:
        CorruptError: A model file cannot be loaded; the message says how to repair it.
    """
    report = progress or (lambda _stage, _done, _total: None)
    report("loading model", 0, None)
    avoid: frozenset[str] = frozenset()
    if precision is not None:
        choice = replace(choice, precision=precision)
    elif choice.precision == Precision.AUTO:
        from voxtray.models.measure import precisions_to_avoid

        avoid = precisions_to_avoid(model, resolve_request(choice.provider))
    try:
        recognizer = create_recognizer(model, choice, avoid=avoid)
    except CorruptError as exc:
        raise CorruptError(f"{exc}; {repair_hint(model.name)}") from None
    if warm:
        report("warming up", 0, None)
        recognizer.warmup()
    return recognizer


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
) -> DictationPipeline:
    """A warmed-up pipeline for `model_name` (default: the catalog's default model).

    Both models are installed first when missing (see `ensure_installed`), so a failed
    install loads nothing. With `remote`, the recogniser is what it makes of the local
    one's factory (a remote engine that loads the local model only if it must fall back).
    """

    def installed(name: str) -> InstalledModel:
        return ensure_installed(
            store, name, install=install, refresh_stale=refresh_stale, progress=progress
        )

    model = installed(model_name or store.catalog.default_stt)
    vad_model = installed(store.catalog.default_vad)
    if remote is None:
        recognizer = load_recognizer(model, choice, progress=progress)
    else:
        recognizer = remote(lambda: load_recognizer(model, choice, warm=False))
        recognizer.warmup()
    return DictationPipeline(load_vad(vad_model), recognizer, vad)
