"""A history entry's kept audio transcribed again, stored as a new entry marked `rerun_of`.

`rerun_entry` is the one way it is done. With the loaded model, `Dictation.rerun` lends it
its pipeline between dictations. Another model is loaded by `RerunQueue` beside the
dictation's own (which keeps serving the hotkey) on one thread of its own: re-runs take
their turn there, so presses in a row never load a model each; requests in a row for one
model share its load, and it is let go once none waits.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxtray.choices import Engine
from voxtray.config import Settings
from voxtray.dictation.keeper import add_to_history
from voxtray.dictation.utterance import Utterance
from voxtray.errors import VoxtrayError, first_line
from voxtray.history.audio import AudioArchive
from voxtray.history.store import History
from voxtray.inference.assembly import build_pipeline, vad_options
from voxtray.inference.engines import EngineChoice
from voxtray.inference.pipeline import DictationPipeline
from voxtray.inference.vad import VadOptions
from voxtray.models.store import ModelStore
from voxtray.text.postprocess import TextOptions, process

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

log = logging.getLogger(__name__)

PipelineBuilder = Callable[..., DictationPipeline]
# What a loaded pipeline was built for: another request may share it only if it matches.
_LoadKey = tuple[str, EngineChoice, VadOptions]


def speech_models(store: ModelStore) -> list[str]:
    """Installed speech-to-text models (the voice activity detector left out), by name."""
    names = []
    for installed in store.installed():
        entry = store.catalog.models.get(installed.name)
        if entry is not None and entry.family != "silero-vad":
            names.append(installed.name)
    return sorted(names)


def rerun_entry(
    pipeline: DictationPipeline,
    entry_id: int,
    samples: NDArray[np.float32],
    options: TextOptions,
    history: History,
) -> Utterance:
    """Transcribe an entry's audio with `pipeline` and store the text (not typed) as a new
    entry marked `rerun_of`.

    Raises:
        DiskError: The history cannot store it.
    """
    record = pipeline.transcribe([samples], decode_ahead=False)
    text = process(record.text, options).text
    timings = {"stt": record.stt_ms, "vad": record.vad_ms}
    new_id = add_to_history(history, text, record, timings, rerun_of=entry_id)
    return Utterance(text, new_id, record, timings, delivered=False)


@dataclass(frozen=True)
class RerunRequest:
    entry_id: int
    model: str


RerunDone = Callable[[RerunRequest, "int | None", str], None]
"""Told on the re-run thread: the request, the new entry's id (None if it failed) and
what went wrong ("" when nothing did)."""


class RerunQueue:
    """Re-runs with other models, one at a time.

    Args:
        store: The installed models.
        history: Where the new entries go.
        audio: The kept recordings.
        settings: The settings in force when a request's turn comes (text handling, VAD,
            engine), as a callable.
        done: Called for each request, on the re-run thread.
        build: Builds a pipeline (`build_pipeline`).
    """

    def __init__(
        self,
        store: ModelStore,
        history: History,
        audio: AudioArchive,
        settings: Callable[[], Settings],
        done: RerunDone,
        build: PipelineBuilder = build_pipeline,
    ) -> None:
        self._store, self._history, self._audio = store, history, audio
        self._settings, self._done, self._build = settings, done, build
        self._lock = threading.Lock()
        self._waiting: deque[RerunRequest] = deque()
        self._running: RerunRequest | None = None
        self._thread: threading.Thread | None = None
        self._loaded: tuple[_LoadKey, DictationPipeline] | None = None  # the thread's own

    def request(self, entry_id: int, model: str) -> int | None:
        """Queue a re-run of the entry with `model`.

        Returns:
            How many re-runs are ahead of it (0: it starts now), or None when the same
            one is already waiting or running (nothing is added).
        """
        wanted = RerunRequest(entry_id, model)
        with self._lock:
            if wanted == self._running or wanted in self._waiting:
                return None
            self._waiting.append(wanted)
            ahead = len(self._waiting) - 1 + (self._running is not None)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._drain, name="voxtray-rerun", daemon=True
                )
                self._thread.start()
        return ahead

    def _drain(self) -> None:
        while (wanted := self._next()) is not None:
            new_id: int | None
            try:
                new_id, problem = self._run(wanted), ""
            except (VoxtrayError, RuntimeError) as exc:
                new_id, problem = None, first_line(exc)
            try:
                self._done(wanted, new_id, problem)
            except Exception:  # the queue must outlive its listener's bug
                log.exception("re-run listener")

    def _next(self) -> RerunRequest | None:
        """The next request, now running; None (and the thread ends, letting the loaded
        model go) when none waits."""
        with self._lock:
            if not self._waiting:
                self._running, self._thread, self._loaded = None, None, None
                return None
            self._running = self._waiting.popleft()
            return self._running

    def _run(self, wanted: RerunRequest) -> int | None:
        settings = self._settings()
        samples = self._audio.load(wanted.entry_id)
        self._store.require(wanted.model)
        choice = EngineChoice.of(settings)
        if choice.engine is Engine.REMOTE:  # another model is a local one
            choice = dataclasses.replace(choice, engine=Engine.AUTO)
        key: _LoadKey = (wanted.model, choice, vad_options(settings))
        if self._loaded is None or self._loaded[0] != key:
            self._loaded = None  # the previous model is let go before the next one loads
            pipeline = self._build(self._store, choice, model_name=wanted.model, vad=key[2])
            self._loaded = (key, pipeline)
        options = TextOptions.of(settings)
        return rerun_entry(
            self._loaded[1], wanted.entry_id, samples, options, self._history
        ).history_id
