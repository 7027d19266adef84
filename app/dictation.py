"""One dictation, start to finish, without Qt: microphone -> pipeline -> history -> output.

`Dictation` owns the loaded model, the open microphone and the state machine the tray
shows (loading, ready, listening, transcribing, error). Its slow calls (`load`, `stop`)
belong on a worker thread; the Qt layer (app/ui/worker.py) puts them there.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from app.audio.cues import Cue, CuePlayer, OutputStream, sounddevice_stream
from app.choices import DictationState, Engine, HotkeyMode
from app.config import Settings
from app.errors import BadInputError, VoxtrayError
from app.history import History
from app.history_audio import AUDIO_FOLDER, AudioArchive, AudioLimits
from app.inference.assembly import RemoteWrapper, build_pipeline, vad_options
from app.inference.engines import EngineChoice
from app.inference.live import LiveOptions
from app.inference.pipeline import DictationPipeline, UtteranceRecord
from app.live_typing import LiveTypist
from app.models.store import ModelStore
from app.text.postprocess import HistoryContext, Processed, TextOptions, process

RETRACT_WINDOW_S = 60.0
"""How long "scratch that" may erase the previous utterance's text."""

if TYPE_CHECKING:
    from app.output.base import Delivery
    from app.output.target import FocusTarget
    from app.secret_store import ApiKeyStore

REMOTE_RETRY_S = 60.0
"""After a remote failure the local model works alone this long, then the server is tried."""


@dataclass
class Utterance:
    """What the HUD and `voxtray status` show about the last dictation."""

    text: str
    history_id: int
    record: UtteranceRecord
    timings_ms: dict[str, float]
    delivered: bool
    error: str | None = None
    partial: bool = False  # typing stopped early: part typed, the rest on the clipboard


@dataclass
class Callbacks:
    """Called from whichever thread made the change; the UI marshals them."""

    state: Callable[[DictationState, str], None] = lambda state, detail: None
    progress: Callable[[str, int, int | None], None] = lambda stage, done, total: None
    utterance: Callable[[Utterance], None] = lambda utterance: None
    warning: Callable[[str], None] = lambda message: None
    partial: Callable[[str, str], None] = lambda committed, tentative: None
    """Live text while listening: words that stay, and the guess after them."""


@dataclass
class LoadedModel:
    model: str
    engine: str
    provider: str
    precision: str
    load_s: float
    extra: dict[str, Any] = field(default_factory=dict)


class Dictation:
    """The dictation engine room. Thread-safe for start/stop/status calls."""

    def __init__(
        self,
        store: ModelStore,
        history: History,
        callbacks: Callbacks | None = None,
        *,
        sd_module: Any = None,
        output_factory: Callable[[str], Any] | None = None,
        api_keys: ApiKeyStore | None = None,
    ) -> None:
        self.store = store
        self._api_keys = api_keys
        self.history = history
        self.callbacks = callbacks or Callbacks()
        self._sd_module = sd_module
        self._output_factory = output_factory
        self._lock = threading.RLock()
        self._state = DictationState.LOADING
        self._detail = ""
        self._pipeline: DictationPipeline | None = None
        self._microphone: Any = None
        self._output: Any = None
        self.loaded: LoadedModel | None = None
        self.last: Utterance | None = None
        self._started_at = 0.0
        self._first_audio_at: float | None = None
        self._mic_error: str | None = None
        self._text_options = TextOptions()
        self._cues = CuePlayer(enabled=False, open_stream=self._open_cue_stream)
        self._typed, self._typed_at = "", 0.0
        self._typed_target: FocusTarget | None = None
        self._target: FocusTarget | None = None
        self.audio = AudioArchive(history.path.parent / AUDIO_FOLDER)
        self._heard: list[Any] = []
        self._typist = LiveTypist(self.callbacks.warning)
        self._as_you_go = False

    # --- state --------------------------------------------------------------------------

    @property
    def state(self) -> DictationState:
        return self._state

    def _set_state(self, state: DictationState, detail: str = "") -> None:
        with self._lock:
            self._state, self._detail = state, detail
        self.callbacks.state(state, detail)

    def current_level(self) -> float | None:
        """The open microphone's level in dBFS, or None while no microphone is open.

        Reads whichever microphone the last `load` opened, so it follows reloads.
        """
        with self._lock:
            microphone = self._microphone
        return None if microphone is None else float(microphone.level)

    def status(self) -> dict[str, Any]:
        with self._lock:
            last = self.last
            reply: dict[str, Any] = {"ok": True, "state": self._state.value, "detail": self._detail}
            pipeline = self._pipeline if self._state is DictationState.LISTENING else None
            partial = pipeline.partial if pipeline is not None else None
        if partial is not None:
            reply["partial"] = {"committed": partial.committed, "tentative": partial.tentative}
        if self.loaded is not None:
            reply["model"] = self.loaded.model
            reply["engine"] = self.loaded.engine
            reply["provider"] = self.loaded.provider
        if last is not None:
            reply["last"] = {
                "text": last.text,
                "timings_ms": last.timings_ms,
                "delivered": last.delivered,
                "language": last.record.language,
            }
        return reply

    # --- loading ------------------------------------------------------------------------

    def load(self, settings: Settings) -> LoadedModel:
        """Install (if needed), load and warm up the model; open the microphone."""
        self._set_state(DictationState.LOADING, f"loading {settings.model}")
        started = time.perf_counter()
        choice = EngineChoice.of(settings)
        try:
            self.close_audio()
            remote = self._remote(settings)
            if settings.engine == Engine.REMOTE:  # the local model (the fallback) runs as usual
                choice = dataclasses.replace(choice, engine=Engine.AUTO)
            pipeline = build_pipeline(
                self.store,
                choice,
                model_name=settings.model,
                vad=vad_options(settings),
                refresh_stale=True,
                progress=self.callbacks.progress,
                remote=remote,
            )
            microphone = self._open_microphone(settings)
            output = self._make_output(settings.output)
        except VoxtrayError as exc:
            self._set_state(DictationState.ERROR, str(exc))
            raise
        recognizer = pipeline.recognizer
        self._text_options = TextOptions.of(settings)
        live = settings.live_text and settings.engine is not Engine.REMOTE
        pipeline.set_live(LiveOptions() if live else None, self._on_partial)
        toggle = settings.hotkey_mode is HotkeyMode.TOGGLE
        self._as_you_go = live and toggle and settings.type_as_you_go
        self._cues.enabled = settings.sound_cues
        self.audio.limits = AudioLimits(settings.history_audio_mb, settings.history_audio_days)
        with self._lock:
            self._pipeline, self._microphone, self._output = pipeline, microphone, output
            self.loaded = LoadedModel(
                model=recognizer.model,
                engine=recognizer.engine,
                provider=recognizer.provider,
                precision=choice.precision,
                load_s=time.perf_counter() - started,
                extra={"device": getattr(recognizer, "device", "")},
            )
        self._set_state(DictationState.READY, f"{recognizer.model} on {recognizer.provider}")
        return self.loaded

    def _remote(self, settings: Settings) -> RemoteWrapper | None:
        """With engine remote: the server's engine, the local model taking over (with a
        one-line warning) when the server is unreachable, too slow or refuses."""
        if settings.engine != Engine.REMOTE:
            return None
        if problem := settings.remote_problem():
            self.callbacks.warning(f"{problem}; using the local model")
            return None
        from app.inference.remote import fallback_wrapper, spec_from_settings
        from app.secret_store import ApiKeyStore

        keys = self._api_keys or ApiKeyStore()
        spec = spec_from_settings(settings, keys.get())

        def warn(reason: str) -> None:
            self.callbacks.warning(f"server failed, using the local model: {reason}")

        return fallback_wrapper(spec, warn, retry_after_s=REMOTE_RETRY_S)

    def _open_microphone(self, settings: Settings) -> Any:
        from app.audio.microphone import Microphone

        microphone = Microphone(
            settings.microphone,
            preroll_ms=settings.preroll_ms,
            tail_ms=settings.tail_ms,
            sd_module=self._sd_module,
        )
        microphone.open()
        # Through PulseAudio the first stream of a process can take over a second to
        # deliver; "ready" must mean the pre-roll is filling.
        if not microphone.wait_for_audio(timeout=3.0):
            self.callbacks.warning(
                f"microphone {settings.microphone or 'default'} delivers no audio yet"
            )
        return microphone

    def _make_output(self, preferred: str) -> Any:
        if self._output_factory is not None:
            return self._output_factory(preferred)
        from app.output.chooser import choose_output
        from app.output.clipboard import recover_clipboard

        recover_clipboard()  # a paste killed mid-way borrowed the user's clipboard
        return choose_output(preferred)

    # --- push-to-talk ------------------------------------------------------------------

    def start(self) -> bool:
        """Begin listening; False (and nothing happens) unless ready."""
        with self._lock:
            if self._state is not DictationState.READY or self._pipeline is None:
                return False
            pipeline, microphone = self._pipeline, self._microphone
            self._started_at = time.perf_counter()
            self._first_audio_at = None
            self._mic_error = None
            self._heard = []
            pipeline.start()
            self._state = DictationState.LISTENING
            output = self._output
        # Remembered now: text typed later must go where the user was when they pressed.
        capture = getattr(output, "capture_target", None)
        self._target = capture() if capture is not None else None
        if self._as_you_go:
            self._typist.begin(output, self._target, self._text_options)
        microphone.begin(self._feed, on_error=self._on_mic_error)
        self.callbacks.state(DictationState.LISTENING, "")
        self._cues.play(Cue.START)
        return True

    def _feed(self, chunk: Any) -> None:
        if self._first_audio_at is None:
            self._first_audio_at = time.perf_counter()
        pipeline = self._pipeline
        if pipeline is not None:
            if self.audio.limits.keeps_any:
                self._heard.append(chunk.copy())
            pipeline.feed(chunk)

    def _on_mic_error(self, message: str) -> None:
        # The device is gone: say so, and transcribe what was captured up to now. stop()
        # waits on the microphone thread, which is this one, so it runs on its own.
        self._mic_error = message
        self.callbacks.warning(f"microphone: {message}")
        threading.Thread(target=self.stop, name="voxtray-mic-lost", daemon=True).start()

    def stop(self) -> Utterance | None:
        """End listening, transcribe the rest, store it, then type it. Blocking."""
        with self._lock:
            if self._state is not DictationState.LISTENING or self._pipeline is None:
                return None
            self._state = DictationState.TRANSCRIBING
            pipeline, microphone, output = self._pipeline, self._microphone, self._output
        self.callbacks.state(DictationState.TRANSCRIBING, "")
        self._cues.play(Cue.STOP)
        released = time.perf_counter()
        # The tail guards a last word still being spoken as the key comes up; when the VAD
        # already heard the speech end, waiting for it only delays the text.
        tail_ms = None if pipeline.segmenter.speech_active else 0
        microphone.end_and_wait(timeout=5.0, tail_ms=tail_ms)
        record = pipeline.finish()
        utterance = self._store_and_deliver(record, output, released)
        with self._lock:
            self.last = utterance
        # Ready first: whoever reacts to the utterance may press again at once.
        if utterance.error or self._mic_error:
            self._cues.play(Cue.ERROR)
        if utterance.partial:
            self._set_state(DictationState.READY, utterance.error or "")
        elif utterance.error and not utterance.delivered:
            self._set_state(DictationState.READY, f"not typed: {utterance.error}")
        else:
            self._set_state(DictationState.READY, self._mic_error or "")
        self.callbacks.utterance(utterance)
        return utterance

    def _store_and_deliver(
        self, record: UtteranceRecord, output: Any, released: float
    ) -> Utterance:
        text_ready = time.perf_counter()
        mic_start = (self._first_audio_at or self._started_at) - self._started_at
        timings = {
            "mic_start": 1000 * mic_start,
            "vad": record.vad_ms,
            "stt": record.stt_ms,
            "release_to_text": 1000 * (text_ready - released),
            **{f"stt_{k}": v for k, v in record.stage_totals_ms().items()},
        }
        processed = process(record.text, self._text_options, self._history_context())
        rest = self._typist.finish(processed)  # typed while speaking, already there
        # Stored before it is typed: a failed delivery loses nothing.
        history_id = self.history.add(
            processed.text,
            model=record.model,
            engine=record.engine,
            provider=record.provider,
            audio_s=record.audio_s,
            timings=timings,
        )
        self._keep_audio(history_id)
        error = None
        delivered = partial = False
        if rest.typed or rest.actions:
            try:
                delivery = self._deliver(output, rest)
            except VoxtrayError as exc:
                error = str(exc)
                self.history.mark_failed(history_id, error)
            else:
                if delivery is None or delivery.complete:
                    delivered = True
                    self.history.mark_delivered(history_id)
                else:
                    error, partial = delivery.summary(), True
                    self.history.mark_partial(
                        history_id, delivery.typed_text, delivery.target, delivery.reason or ""
                    )
        elif rest is not processed:  # all of it typed while speaking
            delivered = True
            self.history.mark_delivered(history_id)
        timings["delivery"] = 1000 * (time.perf_counter() - text_ready)
        timings["total"] = 1000 * (time.perf_counter() - released)
        timings["rtf"] = record.stt_ms / 1000 / record.audio_s if record.audio_s else 0.0
        return Utterance(processed.text, history_id, record, timings, delivered, error, partial)

    def _on_partial(self, committed: str, tentative: str) -> None:
        self.callbacks.partial(committed, tentative)
        self._typist.offer(committed)

    def _keep_audio(self, history_id: int) -> None:
        heard, self._heard = self._heard, []
        if heard:
            try:
                self.audio.store(history_id, np.concatenate(heard))
            except VoxtrayError as exc:
                self.callbacks.warning(str(exc))

    def rerun(self, entry_id: int) -> Utterance:
        """Transcribe an entry's kept audio again with the loaded model, vocabulary and
        language; the text is stored as a new entry marked `rerun_of` and not typed.

        Raises:
            NotFoundError: No audio is kept for the entry.
            BadInputError: Dictation is not ready (loading, listening or transcribing).
        """
        samples = self.audio.load(entry_id)
        with self._lock:
            if self._state is not DictationState.READY or self._pipeline is None:
                raise BadInputError(f"cannot re-run while {self._state.value}")
            self._state, pipeline = DictationState.TRANSCRIBING, self._pipeline
        self.callbacks.state(DictationState.TRANSCRIBING, f"re-running dictation {entry_id}")
        try:
            record = pipeline.transcribe([samples])
            text = process(record.text, self._text_options).text
            timings = {"stt": record.stt_ms, "vad": record.vad_ms}
            new_id = self.history.add(
                text,
                model=record.model,
                engine=record.engine,
                provider=record.provider,
                audio_s=record.audio_s,
                timings=timings,
                rerun_of=entry_id,
            )
        finally:
            self._set_state(DictationState.READY)
        return Utterance(text, new_id, record, timings, delivered=False)

    def _history_context(self) -> HistoryContext:
        recent = time.monotonic() - self._typed_at < RETRACT_WINDOW_S
        same_window = self._typed_target == self._target
        retractable = recent and same_window and bool(self._typed)
        return HistoryContext(self._typed, retractable=retractable)

    def _deliver(self, output: Any, processed: Processed) -> Delivery | None:
        """Erase, type, press Enter; keys go through the output's `press_key(name, count)`
        where it has one. Returns the typed text's delivery (None when nothing was typed)."""
        press = getattr(output, "press_key", None)
        self._typed = ""  # until this text is known to be there in full
        if processed.backspaces:
            if press is None:
                self.callbacks.warning("this output cannot erase text: nothing was taken back")
            else:
                press("BackSpace", processed.backspaces)
        delivery = output.deliver(processed.typed, self._target) if processed.typed else None
        complete = delivery is None or delivery.complete
        if processed.press_enter and complete:
            if press is None:
                output.deliver("\n", self._target)
            else:
                press("Return", 1)
        # Text sent with Enter is no longer there to take back.
        if complete and not processed.press_enter:
            self._typed, self._typed_at = processed.typed, time.monotonic()
            self._typed_target = self._target
        return delivery

    def _open_cue_stream(self, rate: int, device: str | int | None) -> OutputStream:
        if self._sd_module is None:
            return sounddevice_stream(rate, device)
        stream: OutputStream = self._sd_module.OutputStream(
            samplerate=rate, channels=1, dtype="float32", device=device
        )
        return stream

    # --- teardown -----------------------------------------------------------------------

    def close_audio(self) -> None:
        with self._lock:
            microphone, self._microphone = self._microphone, None
        if microphone is not None:
            microphone.close()

    def close(self) -> None:
        self.close_audio()
        self._cues.close()
        self.history.close()
