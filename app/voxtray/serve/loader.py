"""Build the server's `InferenceService` from flags through the one assembly
(`voxtray.inference.assembly`): the same store lookup, recogniser and VAD as the tray and
`voxtray transcribe`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from voxtray.gpu.providers import resolve_request
from voxtray.inference.assembly import ensure_installed, load_recognizer, load_vad
from voxtray.inference.engines import EngineChoice, pick_precision
from voxtray.models.progress import ProgressFn
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.serve.service import InferenceService, ServiceInfo, device_name


def _store() -> ModelStore:
    from voxtray.models.catalog import load_catalog
    from voxtray.paths import models_dir

    return ModelStore(models_dir(), load_catalog())


def _ensure(
    store: ModelStore,
    name: str,
    say: Callable[[str], None],
    install_progress: Callable[[str], ProgressFn] | None,
) -> InstalledModel:
    def install(model: str, force: bool) -> InstalledModel:
        say(f"installing {model}")
        progress = install_progress(model) if install_progress else None
        return store.install(model, force=force, progress=progress)

    return ensure_installed(store, name, install=install)


def load_service(
    args: Any,
    say: Callable[[str], None],
    install_progress: Callable[[str], ProgressFn] | None = None,
) -> tuple[InferenceService, Callable[[], dict[str, Any]]]:
    """The warmed-up service, and the self-test (run later, on its worker) for diagnostics;
    `install_progress(model)` renders a model's install (the front end words it)."""
    store = _store()
    model = _ensure(store, args.model or store.catalog.default_stt, say, install_progress)
    vad_model = _ensure(store, store.catalog.default_vad, say, install_progress)
    # A server's threads sleep between ops: busy-waiting ones took CPU from the HTTP side,
    # the VAD and any other process on the box (nearly twice the CPU per request).
    choice = dataclasses.replace(EngineChoice.of(args), spin=False)
    say(f"loading {model.name}")
    recognizer = load_recognizer(model, choice)
    precision = pick_precision(model, choice.precision, resolve_request(choice.provider))
    info = ServiceInfo(
        model=model.name,
        engine=recognizer.engine,
        provider=recognizer.provider,
        device=device_name(recognizer.provider),
        precision=precision,
        languages=list(store.catalog.get(model.name).languages),
    )
    service = InferenceService(
        recognizer,
        load_vad(vad_model),
        info,
        max_queue=args.max_queue,
        max_audio_s=args.max_audio_s,
        max_sample_rate=getattr(args, "max_sample_rate", 48000),
    )

    def selftest() -> dict[str, Any]:
        from voxtray.inference.selftest import run_selftest

        report = run_selftest(
            model, choice.provider, precision=precision, runs=2, threads=choice.threads
        )
        return report.to_json()

    return service, selftest
