"""A history entry's kept audio transcribed again with a model other than the loaded one.

The model is loaded for this one transcription beside the dictation's own (which keeps
serving the hotkey), then let go. `Dictation.rerun` is the cheaper path for the loaded one.
"""

from __future__ import annotations

import dataclasses

from voxtray.choices import Engine
from voxtray.config import Settings
from voxtray.history.audio import AudioArchive
from voxtray.history.store import History
from voxtray.inference.assembly import build_pipeline, vad_options
from voxtray.inference.engines import EngineChoice
from voxtray.models.store import ModelStore
from voxtray.text.postprocess import TextOptions, process


def speech_models(store: ModelStore) -> list[str]:
    """Installed speech-to-text models (the voice activity detector left out), by name."""
    names = []
    for installed in store.installed():
        entry = store.catalog.models.get(installed.name)
        if entry is not None and entry.family != "silero-vad":
            names.append(installed.name)
    return sorted(names)


def rerun_with(
    store: ModelStore,
    history: History,
    audio: AudioArchive,
    settings: Settings,
    entry_id: int,
    model: str,
) -> int:
    """Transcribe the entry's kept audio with `model` (the other settings as they are) and
    store it as a new entry marked `rerun_of`; its id.

    Raises:
        NotFoundError: No audio is kept for the entry, or the model is not installed.
        VoxtrayError: The model cannot be loaded, or the history cannot store the text.
    """
    samples = audio.load(entry_id)
    store.require(model)
    choice = EngineChoice.of(settings)
    if choice.engine is Engine.REMOTE:  # another model is a local one
        choice = dataclasses.replace(choice, engine=Engine.AUTO)
    pipeline = build_pipeline(store, choice, model_name=model, vad=vad_options(settings))
    record = pipeline.transcribe([samples], decode_ahead=False)
    text = process(record.text, TextOptions.of(settings)).text
    return history.add(
        text,
        model=record.model,
        engine=record.engine,
        provider=record.provider,
        audio_s=record.audio_s,
        timings={"stt": record.stt_ms, "vad": record.vad_ms},
        rerun_of=entry_id,
    )
