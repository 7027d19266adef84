"""Build the server's `InferenceService` from flags: the same store, recogniser factory and
VAD the tray and `voxtray transcribe` use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.inference.engines import EngineChoice, create_recognizer, pick_precision
from app.inference.providers import resolve_request
from app.models.store import InstalledModel, ModelStore
from app.serve.service import InferenceService, ServiceInfo, device_name


def _store() -> ModelStore:
    from app.models.catalog import load_catalog
    from app.paths import models_dir

    return ModelStore(models_dir(), load_catalog())


def _ensure(store: ModelStore, name: str, say: Callable[[str], None]) -> InstalledModel:
    model = store.get(name)
    if model is None:
        from app.progress import StderrProgress

        store.catalog.get(name)
        say(f"installing {name}")
        model = store.install(name, progress=StderrProgress(name))
    return model


def load_service(
    args: Any, say: Callable[[str], None]
) -> tuple[InferenceService, Callable[[], dict[str, Any]]]:
    """The warmed-up service, and the self-test (run later, on its worker) for diagnostics."""
    from app.inference.vad import SileroVad

    store = _store()
    model = _ensure(store, args.model or store.catalog.default_stt, say)
    vad_model = _ensure(store, store.catalog.default_vad, say)
    choice = EngineChoice.of(args)
    say(f"loading {model.name}")
    recognizer = create_recognizer(model, choice)
    recognizer.warmup()
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
        SileroVad(vad_model.variant_files("fp32")["model"]),
        info,
        max_queue=args.max_queue,
        max_audio_s=args.max_audio_s,
    )

    def selftest() -> dict[str, Any]:
        from app.gpu.selftest import run_selftest

        report = run_selftest(model, choice.provider, precision=precision, runs=2,
                              threads=choice.threads)
        return report.to_json()

    return service, selftest
