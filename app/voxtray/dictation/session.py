"""One dictation, start to finish, without Qt: microphone -> pipeline -> history -> output.

`Dictation` owns the loaded model, the open microphone and the state machine the tray
shows (loading, ready, listening, transcribing, error). Its slow calls (`load`, `stop`)
belong on a worker thread; the Qt layer (app/voxtray/ui/worker.py) puts them there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from voxtray.audio.cues import Cue, CuePlayer
from voxtray.choices import DictationState, Engine, HotkeyMode
from voxtray.config import Settings
from voxtray.dictation.delivery_state import DeliveryState, capture_target
from voxtray.dictation.io import DictationIO, OutputFactory
from voxtray.dictation.journal import JOURNAL_DIR, Journal, Recording, spare_folder
from voxtray.dictation.keeper import HistoryKeeper
from voxtray.dictation.kept_audio import KeptAudio
from voxtray.dictation.live_typing import LiveTypist
from voxtray.dictation.utterance import Utterance
from voxtray.dictation.verification import DeliveryCheck
from voxtray.errors import BadInputError, ExitCode, VoxtrayError, first_line
from voxtray.gpu.failures import GpuFailure
from voxtray.history.audio import AUDIO_FOLDER, AudioArchive
from voxtray.history.store import History
from voxtray.inference.assembly import build_pipeline, vad_options
from voxtray.inference.engines import EngineChoice, RecognizerFactory, create_recognizer
from voxtray.inference.gpu_fallback import GpuFallbackRecognizer
from voxtray.inference.live import LiveOptions
from voxtray.inference.pipeline import DictationPipeline, UtteranceRecord
from voxtray.models.store import ModelStore
from voxtray.output.explain import explain as explain_output
from voxtray.settings_writer import keep_running_model
from voxtray.text.postprocess import TextOptions, process

if TYPE_CHECKING:
    from voxtray.audio.microphone import Microphone
    from voxtray.inference.remote_key import ApiKeyStore
    from voxtray.output.base import TextOutput
    from voxtray.output.delivery import Delivery
    from voxtray.output.target import FocusTarget

Chunk = NDArray[np.float32]

log = logging.getLogger(__name__)

# How often the watcher looks at the microphone and at text waiting for the history.
WATCH_EVERY_S = 0.5
MIC_RETRY_EVERY_S = 1.0
HISTORY_RETRY_EVERY_S = 5.0
# Ready this long after a dictation, the recogniser hands back its working memory
# (~25-50 MB); refilling it costs the next dictation a few ms, so not between quick ones.
RELEASE_IDLE_AFTER_S = 10.0


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
    extra: dict[str, str] = field(default_factory=dict)


class Dictation:
    """The dictation engine room. Thread-safe for start/stop/status calls."""

    def __init__(
        self,
        store: ModelStore,
        history: History,
        callbacks: Callbacks | None = None,
        *,
        sd_module: Any = None,
        output_factory: OutputFactory | None = None,
        api_keys: ApiKeyStore | None = None,
        journal: Journal | None = None,
        recognizer_factory: RecognizerFactory | None = None,
    ) -> None:
        self.store = store
        self.history = history
        self.callbacks = callbacks or Callbacks()
        data = history.path.parent
        self.journal = journal or Journal(data / JOURNAL_DIR, spare_folder(data))
        self._io = DictationIO(sd_module, output_factory, api_keys, recognizer_factory)
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)
        self._state = DictationState.LOADING
        self._detail = ""
        self._pipeline: DictationPipeline | None = None
        self._last_active: float | None = None  # when recognition last ran (monotonic)
        self._microphone: Microphone | None = None
        self._output: TextOutput | None = None
        self._settings: Settings | None = None
        self.loaded: LoadedModel | None = None
        self.gpu_failure: GpuFailure | None = None
        self.last: Utterance | None = None
        self._started_at = 0.0
        self._first_audio_at: float | None = None
        self._mic_error: str | None = None
        self._mic_problem: str | None = None
        self._recording: Recording | None = None
        self.keeper = HistoryKeeper(
            history,
            self.journal,
            lambda message: self.callbacks.warning(message),
            lambda state, detail: self.callbacks.state(state, detail),
        )
        self._closing = False
        self._watch_stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._text_options = TextOptions()
        self._cues = CuePlayer(enabled=False, open_stream=self._io.open_cue_stream)
        self._sent = DeliveryState(self.callbacks.warning)
        self.checks = DeliveryCheck(self.keeper, lambda line: self.callbacks.warning(line))
        self._target: FocusTarget | None = None
        self.audio = AudioArchive(history.path.parent / AUDIO_FOLDER)
        self.kept_audio = KeptAudio(self.audio, history, lambda line: self.callbacks.warning(line))
        self._typist = LiveTypist(self.callbacks.warning)
        self._as_you_go = False

    # --- state --------------------------------------------------------------------------

    @property
    def state(self) -> DictationState:
        return self._state

    def _set_state(self, state: DictationState, detail: str = "") -> None:
        with self._lock:
            self._state, self._detail = state, detail
            self._idle.notify_all()
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
            unstored = self.keeper.waiting
        if partial is not None:
            reply["partial"] = {"committed": partial.committed, "tentative": partial.tentative}
        if self.loaded is not None:
            reply["model"] = self.loaded.model
            reply["engine"] = self.loaded.engine
            reply["provider"] = self.loaded.provider
        if unstored:
            reply["unstored"] = unstored
        if (output := self._output) is not None:
            reply["output"] = {"method": str(output.name), "reason": explain_output(output)}
        if self.gpu_failure is not None:
            reply["gpu_failure"] = self.gpu_failure.to_json()
        if last is not None:
            reply["last"] = {
                "text": last.text,
                "timings_ms": last.timings_ms,
                "delivered": last.delivered,
                "verified": last.verified,
                "language": last.record.language,
            }
        return reply

    def refusal(self) -> tuple[str, ExitCode] | None:
        """Why `start()` cannot begin now (one line and an exit code), or None when it can,
        or when it is only busy with the previous dictation."""
        with self._lock:
            state, detail, problem = self._state, self._detail, self._mic_problem
        if self._closing:
            return "Voxtray is quitting", ExitCode.NOT_RUNNING
        if state is DictationState.ERROR:
            code = ExitCode.NOT_FOUND if problem is not None else ExitCode.INTERNAL
            return f"cannot start dictation: {detail or 'error'}", code
        if state is DictationState.LOADING:
            return f"cannot start dictation yet: {detail or 'loading'}", ExitCode.NOT_RUNNING
        return None

    # --- loading ------------------------------------------------------------------------

    def load(self, settings: Settings) -> LoadedModel:
        """Install (if needed), load and warm up the model, recover unfinished dictations
        from the journal, and open the microphone.

        A microphone that cannot be opened leaves the model loaded and the state `error`,
        and is tried again in the background until it works (then the state is `ready`).
        """
        self._set_state(DictationState.LOADING, f"loading {settings.model}")
        started = time.perf_counter()
        choice = EngineChoice.of(settings)
        try:
            self.close_audio()
            remote = self._io.remote(settings, self.callbacks.warning)
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
                on_gpu_failure=self._gpu_failed,
                create=self._io.recognizer_factory or create_recognizer,
            )
        except VoxtrayError as exc:
            if not self._resume_previous():
                self._set_state(DictationState.ERROR, str(exc))
            raise
        microphone, mic_error = None, None
        try:
            microphone = self._io.open_microphone(settings, self.callbacks.warning)
        except VoxtrayError as exc:
            mic_error = exc
        try:
            output = self._io.make_output(settings.output)
        except VoxtrayError as exc:
            if microphone is not None:
                microphone.close()
            self._set_state(DictationState.ERROR, str(exc))
            raise
        recognizer = pipeline.recognizer
        self._text_options = TextOptions.of(settings)
        live = settings.live_text and settings.engine is not Engine.REMOTE
        toggle = settings.hotkey_mode is HotkeyMode.TOGGLE
        self._as_you_go = live and toggle and settings.type_as_you_go
        options = LiveOptions(keep_committed=self._as_you_go)
        pipeline.set_live(options if live else None, self._on_partial)
        # A guess on a remote engine is a request to the server that cannot be taken back.
        pipeline.decode_ahead = settings.engine is not Engine.REMOTE
        self._cues.enabled = settings.sound_cues
        self.kept_audio.set_limits(settings.history_audio_mb, settings.history_audio_days)
        pipeline.release_idle_memory()  # the warm-up's working memory, until the first use
        with self._lock:
            self._pipeline, self._output, self._settings = pipeline, output, settings
            self._microphone = microphone
            self._mic_problem = None if mic_error is None else str(mic_error)
            self.loaded = LoadedModel(
                model=recognizer.model,
                engine=recognizer.engine,
                provider=recognizer.provider,
                precision=choice.precision,
                load_s=time.perf_counter() - started,
                extra={"device": getattr(recognizer, "device", "")},
            )
            self.gpu_failure = None
            if isinstance(recognizer, GpuFallbackRecognizer) and recognizer.failure:
                self._note_gpu_failure(recognizer.failure)
        with self._lock:
            speaking = self._recording
        self.keeper.recover(pipeline, self._text_options, speaking)
        self._start_watcher()
        if mic_error is not None:
            # The model is loaded; the watcher opens the microphone once it works.
            self._set_state(DictationState.ERROR, str(mic_error))
            raise mic_error
        self._set_state(DictationState.READY, f"{recognizer.model} on {recognizer.provider}")
        return self.loaded

    def retune(self, settings: Settings) -> None:
        """Apply the settings that need no reload (text handling, sound cues, audio kept,
        live text) to the loaded model. Live text changes wait for the next load while a
        dictation is under way."""
        toggle = settings.hotkey_mode is HotkeyMode.TOGGLE
        with self._lock:
            self._text_options = TextOptions.of(settings)
            self._cues.enabled = settings.sound_cues
            self.kept_audio.set_limits(settings.history_audio_mb, settings.history_audio_days)
            pipeline, busy, loaded = self._pipeline, self._recording, self._settings
            if loaded is not None:
                self._settings = keep_running_model(settings, loaded)
            live = settings.live_text and settings.engine is not Engine.REMOTE
            if pipeline is not None and not busy:
                self._as_you_go = live and toggle and settings.type_as_you_go
                options = LiveOptions(keep_committed=self._as_you_go)
                with contextlib.suppress(RuntimeError):  # an utterance still being decoded
                    pipeline.set_live(options if live else None, self._on_partial)

    def _gpu_failed(self, failure: GpuFailure) -> None:
        """The GPU failed while transcribing (on the recognition thread): the CPU redoes the
        audio and runs the rest of the session; the tray, HUD and `status` say why."""
        self._note_gpu_failure(failure)
        self.callbacks.warning(
            f"the GPU failed ({failure.cause}); what it was transcribing was redone on the "
            "CPU, which runs the rest of this session"
        )

    def _note_gpu_failure(self, failure: GpuFailure) -> None:
        with self._lock:
            self.gpu_failure = failure
            if self.loaded is not None:
                extra = {**self.loaded.extra, "fallback": failure.line()}
                self.loaded = dataclasses.replace(self.loaded, provider="cpu", extra=extra)

    def output(self) -> TextOutput | None:
        """The loaded output backend (None until a model has loaded), to type text again."""
        with self._lock:
            return self._output

    def in_use(self) -> Settings | None:
        """The settings the loaded model was loaded with."""
        with self._lock:
            return self._settings

    def _resume_previous(self) -> bool:
        """After a failed switch, go on with the model that ran before: it is still loaded
        (a pipeline is replaced only once its successor has loaded and warmed up)."""
        with self._lock:
            settings, pipeline = self._settings, self._pipeline
        if settings is None or pipeline is None:
            return False
        try:
            microphone = self._io.open_microphone(settings, self.callbacks.warning)
        except VoxtrayError:
            return False
        with self._lock:
            self._microphone, self._mic_problem = microphone, None
        self._set_state(DictationState.READY, f"still using {settings.model}")
        return True

    # --- push-to-talk ------------------------------------------------------------------

    def start(self) -> bool:
        """Begin listening; False (and nothing happens) unless ready.

        A microphone that fails to start puts the state in `error` (the detail says why)
        and is retried in the background.
        """
        with self._lock:
            pipeline, microphone, output = self._pipeline, self._microphone, self._output
            if (
                self._state is not DictationState.READY
                or pipeline is None
                or microphone is None
                or output is None
                or self._closing
            ):
                return False
            self._started_at = time.perf_counter()
            self._first_audio_at = None
            self._mic_error = None
            self.kept_audio.begin()
            recording = self.journal.begin(model=self.loaded.model if self.loaded else "")
            self._recording = recording
            # Before recognition wakes up (a refill after an idle spell keeps both cores
            # busy): the look-up has 100 ms, and a few milliseconds of CPU do it.
            self.checks.begin()
            pipeline.start()
            try:
                microphone.begin(self._feed, on_error=self._on_mic_error)
            except (VoxtrayError, RuntimeError) as exc:
                pipeline.finish()
                recording.discard()
                self._recording = None
                self._mic_problem = first_line(exc)
                self._state = DictationState.ERROR
                failed = True
            else:
                self._state = DictationState.LISTENING
                failed = False
        if failed:
            self._set_state(DictationState.ERROR, f"{self._mic_problem}; retrying")
            return False
        # Remembered now: text typed later must go where the user was when they pressed.
        self._target = capture_target(output)
        if self._as_you_go:
            self._typist.begin(
                output, self._target, self._text_options, self._sent.context(self._target)
            )
        if recording.problem:
            self.callbacks.warning(recording.problem)
        self.callbacks.state(DictationState.LISTENING, "")
        self._cues.play(Cue.START)
        return True

    def _feed(self, chunk: Chunk) -> None:
        if self._first_audio_at is None:
            self._first_audio_at = time.perf_counter()
        recording = self._recording
        if recording is not None:
            recording.append(chunk)
        pipeline = self._pipeline
        if pipeline is not None:
            self.kept_audio.hear(chunk)
            pipeline.feed(chunk)

    def _on_mic_error(self, message: str) -> None:
        # The device is gone: say so, and transcribe what was captured up to now. stop()
        # waits on the microphone thread, which is this one, so it runs on its own.
        self._mic_error = message
        self.callbacks.warning(f"microphone: {message}")
        threading.Thread(target=self.stop, name="voxtray-mic-lost", daemon=True).start()

    def stop(self) -> Utterance | None:
        """End listening, transcribe the rest, store it, then type it. Blocking.

        Whatever fails on the way, the state leaves `transcribing`: the text is delivered
        even when the history cannot store it (it waits in memory and in the journal and
        is stored later), and audio that could not be transcribed stays in the journal.
        """
        with self._lock:
            pipeline, microphone, output = self._pipeline, self._microphone, self._output
            if (
                self._state is not DictationState.LISTENING
                or pipeline is None
                or microphone is None
                or output is None
            ):
                return None
            self._state = DictationState.TRANSCRIBING
            recording, self._recording = self._recording, None
        self.callbacks.state(DictationState.TRANSCRIBING, "")
        self._cues.play(Cue.STOP)
        released = time.perf_counter()
        utterance: Utterance | None = None
        try:
            # The tail guards a last word still being spoken as the key comes up; once the
            # VAD hears the speaker pause, waiting longer only delays the text. A tail set
            # longer than the default is the user asking for the margin: it is kept whole.
            settings = self._settings
            whole = settings is not None and settings.tail_ms > Settings.tail_ms
            until = None if whole else pipeline.speaker_paused
            tail_ms = 0 if until is not None and until() else None
            microphone.end_and_wait(timeout=5.0, tail_ms=tail_ms, until=until)
            if recording is not None:
                recording.finish_audio()
            record = pipeline.finish()
            utterance = self._store_and_deliver(record, output, released, recording)
        except Exception as exc:  # a bug must not leave the state stuck in transcribing
            log.exception("dictation failed")
            with self._lock:
                self._last_active = time.monotonic()
            self._settle(f"dictation failed: {first_line(exc)} (the audio is kept)", microphone)
            self.callbacks.warning(f"dictation failed: {first_line(exc)}")
            return None
        with self._lock:
            self.last = utterance
            self._last_active = time.monotonic()
        # Ready first: whoever reacts to the utterance may press again at once.
        if utterance.error or self._mic_error:
            self._cues.play(Cue.ERROR)
        if utterance.store_error:
            self.callbacks.warning(f"not saved to history: {utterance.store_error}; will retry")
            detail = f"not saved to history: {utterance.store_error}"
        elif utterance.partial:
            detail = utterance.error or ""
        elif utterance.error and not utterance.delivered:
            detail = f"not typed: {utterance.error}"
        else:
            detail = self._mic_error or ""
        self._settle(detail, microphone)
        self.callbacks.utterance(utterance)
        return utterance

    def _settle(self, detail: str, microphone: Microphone) -> None:
        """Back to ready after a dictation, or to error while the microphone is lost."""
        lost = microphone.lost
        if lost is None:
            self._set_state(DictationState.READY, detail)
            return
        with self._lock:
            self._mic_problem = f"{microphone.label} was lost: {lost}"
        self._set_state(DictationState.ERROR, f"{self._mic_problem}; retrying")

    def _store_and_deliver(
        self,
        record: UtteranceRecord,
        output: TextOutput,
        released: float,
        recording: Recording | None = None,
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
        # Stored before it is typed: a failed delivery loses nothing. A history that cannot
        # store it does not hold the text back: it is typed and kept for a later write.
        processed = process(record.text, self._text_options, self._sent.context(self._target))
        rest = self._typist.finish(processed)  # typed while speaking, already there
        history_id, store_error = self.keeper.add(processed.text, record, timings)
        if recording is not None:
            recording.update(text=processed.text, history_id=history_id)
        error = None
        delivered = partial = False
        delivery: Delivery | None = None
        found = self.checks.field()
        if rest.typed or rest.actions:
            guard = self.checks.guard(found, str(output.name))
            try:
                delivery = self._sent.deliver(output, rest, self._target, guard)
            except VoxtrayError as exc:
                error = str(exc)
            else:
                if delivery is None or delivery.complete:
                    delivered = True
                else:
                    error, partial = delivery.summary(), True
        elif rest is not processed:  # all of it typed while speaking
            delivered = True
        if self._typist.problem is not None and rest is not processed:
            # What typing while speaking could not do stays in the window: say so.
            error, delivered, partial = self._typist.problem, False, True
        partial_delivery = delivery if partial else None
        if recording is not None:
            recording.update(delivered=delivered or partial, error=error)
        if history_id is not None and (processed.typed or processed.actions):
            known = self._target.description if self._target and self._target.known else None
            target = delivery.target if delivery is not None else known
            store_error = self.keeper.mark(
                history_id, delivered, error, partial_delivery, target=target
            )
        timings["delivery"] = 1000 * (time.perf_counter() - text_ready)
        timings["total"] = 1000 * (time.perf_counter() - released)
        timings["rtf"] = record.stt_ms / 1000 / record.audio_s if record.audio_s else 0.0
        self.kept_audio.keep(history_id)  # after the text: its write never delays it
        utterance = Utterance(
            processed.text, history_id, record, timings, delivered, error, partial, store_error
        )
        utterance.output = f"{output.name} · {explain_output(output)}"
        if store_error is None:
            if recording is not None:
                recording.discard()
        else:
            self.keeper.keep_for_later(utterance, recording, partial_delivery)
        self.checks.after(found, delivery, utterance)
        return utterance

    def _on_partial(self, committed: str, tentative: str) -> None:
        self.callbacks.partial(committed, tentative)
        self._typist.offer(committed)

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
            record = pipeline.transcribe([samples], decode_ahead=False)
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
            with self._lock:
                self._last_active = time.monotonic()
            self._set_state(DictationState.READY)
        return Utterance(text, new_id, record, timings, delivered=False)

    def test_recording(self, seconds: float) -> tuple[NDArray[np.float32], str]:
        """Record `seconds` from the open microphone and transcribe them with the loaded
        pipeline; nothing is stored or typed (the set-up window's microphone check).

        Raises:
            BadInputError: No microphone or model is ready, or a dictation is under way.
        """
        with self._lock:
            microphone, pipeline = self._microphone, self._pipeline
            if self._state is not DictationState.READY or microphone is None or pipeline is None:
                raise BadInputError(f"cannot test the microphone while {self._state.value}")
            self._state = DictationState.TRANSCRIBING
        self.callbacks.state(DictationState.TRANSCRIBING, "microphone test")
        blocks: list[NDArray[np.float32]] = []
        try:
            microphone.begin(blocks.append)
            time.sleep(seconds)
            microphone.end_and_wait(seconds + 2.0, tail_ms=0)
            samples = np.concatenate(blocks) if blocks else np.zeros(0, np.float32)
            text = pipeline.transcribe([samples], decode_ahead=False).text if blocks else ""
        finally:
            self._set_state(DictationState.READY)
        return samples.astype(np.float32), process(text, self._text_options).text

    # --- the watcher: a lost microphone, text waiting for the history ---------------------

    def _start_watcher(self) -> None:
        with self._lock:
            if self._watcher is not None:
                return
            self._watcher = threading.Thread(target=self._watch, name="voxtray-watch", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        next_mic = next_history = 0.0
        while not self._watch_stop.wait(WATCH_EVERY_S):
            now = time.monotonic()
            try:
                if now >= next_mic:
                    next_mic = now + MIC_RETRY_EVERY_S
                    self._check_microphone()
                if self.keeper.waiting and now >= next_history:
                    next_history = now + HISTORY_RETRY_EVERY_S
                    self.retry_history()
                self._release_when_idle(now)
                self.kept_audio.prune_if_due()
            except Exception:  # the watcher must outlive any one failure
                log.exception("watcher")

    def _release_when_idle(self, now: float) -> None:
        # Under the lock (~5-12 ms): a start waits for the release to finish, and finds
        # the refill it asks for.
        with self._lock:
            pipeline = self._pipeline
            if (
                pipeline is not None
                and self._state is DictationState.READY
                and self._last_active is not None
                and now - self._last_active >= RELEASE_IDLE_AFTER_S
            ):
                self._last_active = None
                pipeline.release_idle_memory()

    def _check_microphone(self) -> None:
        with self._lock:
            state, microphone = self._state, self._microphone
            lost = None if microphone is None else microphone.lost
            if (
                state is DictationState.READY
                and microphone is not None
                and lost is not None
                and not self._closing
            ):
                self._mic_problem = f"{microphone.label} was lost: {lost}"
                self._state = DictationState.ERROR
                became_error = True
            else:
                became_error = False
            retry = self._state is DictationState.ERROR and self._mic_problem is not None
            settings = self._settings
        if became_error:
            self._set_state(DictationState.ERROR, f"{self._mic_problem}; retrying")
        if retry and settings is not None and not self._closing:
            self._reopen_microphone(settings)

    def _reopen_microphone(self, settings: Settings) -> None:
        self.close_audio()
        self._io.reinitialise_portaudio()
        try:
            microphone = self._io.open_microphone(
                settings, self.callbacks.warning, require_audio=True
            )
        except VoxtrayError as exc:
            with self._lock:
                changed = self._mic_problem != str(exc)
                self._mic_problem = str(exc)
            if changed:
                self._set_state(DictationState.ERROR, f"{exc}; retrying")
            return
        with self._lock:
            if self._state is not DictationState.ERROR or self._closing:
                keep = False
            else:
                self._microphone, self._mic_problem, keep = microphone, None, True
        if not keep:
            microphone.close()
            return
        log.info("microphone back")
        self._set_state(DictationState.READY, "microphone back")

    def retry_history(self) -> int:
        """Store text the history could not take before; returns how many are still waiting."""
        left = self.keeper.retry()
        with self._lock:
            # Asked again under the lock: a dictation may have just added one.
            if not self.keeper.waiting and self._detail.startswith("not saved to history"):
                self._detail = ""
        return left

    # --- teardown -----------------------------------------------------------------------

    def finish(self, timeout: float = 60.0) -> bool:
        """Refuse new dictations, and finish the one in progress (stop, transcribe, store,
        deliver). Blocking; True when nothing is left in progress within `timeout`."""
        with self._lock:
            self._closing = True
        self.stop()
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._state in (DictationState.LISTENING, DictationState.TRANSCRIBING):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.5))
        return True

    def close_audio(self) -> None:
        with self._lock:
            microphone, self._microphone = self._microphone, None
        if microphone is not None:
            microphone.close()

    def close(self) -> None:
        self._watch_stop.set()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=10)
        self.close_audio()
        self._cues.close()
        self.retry_history()
        self.keeper.keep_at_quit()
        self.history.close()
