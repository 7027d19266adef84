"""One dictation's state machine, without Qt: loading, ready, listening, transcribing, error.

`Dictation` makes the transitions; the state the tray shows and the `Loaded` bundle in use
are held under one lock by its base, `ReportedState`, where the state changes only through
`_enter`, which reports each change as it makes it. The bundle is replaced whole, never
changed. The work around the machine lives beside it:
`loading` (model, microphone, output), `finishing` (store, type, keep the audio),
`watcher` (a lost microphone, history retries, idle memory), `rerun` and `mic_test`.
Its slow calls (`load`, `stop`) belong on a worker thread; the Qt layer
(app/voxtray/ui/worker.py) puts them there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from voxtray.audio.cues import Cue, CuePlayer
from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.delivery_state import capture_target
from voxtray.dictation.finishing import Finisher, settled_detail
from voxtray.dictation.io import DictationIO, OutputFactory
from voxtray.dictation.journal import JOURNAL_DIR, Journal, spare_folder
from voxtray.dictation.keeper import HistoryKeeper
from voxtray.dictation.kept_audio import KeptAudio
from voxtray.dictation.loaded import Loaded, LoadedModel, live_options
from voxtray.dictation.loading import Loader
from voxtray.dictation.mic_test import record_and_transcribe
from voxtray.dictation.modes_in_force import ModeOutputs, asks_in_force, in_force
from voxtray.dictation.reported_state import ReportedState
from voxtray.dictation.rerun import rerun_entry
from voxtray.dictation.take import Take
from voxtray.dictation.utterance import Utterance
from voxtray.dictation.verification import DeliveryCheck
from voxtray.dictation.watcher import Watcher
from voxtray.errors import BadInputError, DamagedModelError, VoxtrayError, first_line
from voxtray.gpu.failures import GpuFailure
from voxtray.history.audio import AUDIO_FOLDER, AudioArchive
from voxtray.history.store import History
from voxtray.inference.pipeline import TakeAsks
from voxtray.models.store import ModelStore
from voxtray.output.base import Closable, TextOutput, close_output

if TYPE_CHECKING:
    from voxtray.audio.backend import AudioBackend
    from voxtray.audio.microphone import Microphone
    from voxtray.inference.engines import RecognizerFactory
    from voxtray.inference.remote_key import ApiKeyStore

Chunk = NDArray[np.float32]

log = logging.getLogger(__name__)

READY, LISTENING = DictationState.READY, DictationState.LISTENING
TRANSCRIBING, ERROR = DictationState.TRANSCRIBING, DictationState.ERROR


class Dictation(ReportedState):
    """The dictation engine room. Thread-safe for start/stop/status calls.

    The lock is never held while waiting on the microphone's thread (closing a
    microphone, waiting for its tail): that thread takes the lock for each block.
    """

    def __init__(
        self,
        store: ModelStore,
        history: History,
        callbacks: Callbacks | None = None,
        *,
        sd_module: AudioBackend | None = None,
        output_factory: OutputFactory | None = None,
        api_keys: ApiKeyStore | None = None,
        journal: Journal | None = None,
        recognizer_factory: RecognizerFactory | None = None,
    ) -> None:
        super().__init__(callbacks or Callbacks())
        self.store = store
        self.history = history
        data = history.path.parent
        self.journal = journal or Journal(data / JOURNAL_DIR, spare_folder(data))
        self._io = DictationIO(sd_module, output_factory, api_keys, recognizer_factory)
        self.keeper = HistoryKeeper(history, self.journal, self._warn, self._enter)
        self.checks = DeliveryCheck(self.keeper, self._warn)
        self.audio = AudioArchive(data / AUDIO_FOLDER)
        self.kept_audio = KeptAudio(self.audio, history, self._warn)
        self._finisher = Finisher(
            self.keeper, self.checks, self.kept_audio, self._warn, self.callbacks.worded
        )
        self._mode_outputs = ModeOutputs(self._io.make_output, self._warn)
        self._cues = CuePlayer(enabled=False, open_stream=self._io.open_cue_stream)
        self._loader = Loader(
            store,
            self._io,
            warn=self._warn,
            progress=self._progress,
            on_gpu_failure=self._gpu_failed,
            on_partial=self._on_partial,
        )
        self._watcher = Watcher(self, self._io, self.keeper, self.kept_audio, self._warn)
        self._retired: list[TextOutput] = []  # outputs a load replaced, closed at quit

    # --- loading ------------------------------------------------------------------------

    def load(self, settings: Settings) -> LoadedModel:
        """Install (if needed), load and warm up the model, recover unfinished dictations
        from the journal, and open the microphone.

        A microphone that cannot be opened leaves the model loaded and the state `error`,
        and is tried again in the background until it works (then the state is `ready`).
        A model that cannot be loaded leaves the previous one running, if there was one.
        """
        self._enter(DictationState.LOADING, f"loading {settings.model}")
        try:
            self.close_audio()
            built = self._loader.build(settings)
        except VoxtrayError as exc:
            if not self._resume_previous():
                with self._lock:
                    self._damaged = exc.model if isinstance(exc, DamagedModelError) else None
                    self._enter(ERROR, str(exc))
            raise
        previous = self._bundle()
        try:
            loaded, mic_error = self._loader.equip(
                settings, built, _kept_output(previous, settings)
            )
        except VoxtrayError as exc:
            self._enter(ERROR, str(exc))
            raise
        self._apply_light(settings)
        with self._lock:
            self._loaded = loaded
            self._mic_problem = None if mic_error is None else str(mic_error)
            speaking = None if self._take is None else self._take.recording
            if previous is not None and previous.output is not loaded.output:
                # Closed at quit: a take, live typing or "Type again" may still use it.
                self._retired.append(previous.output)
        self.keeper.recover(loaded.pipeline, loaded.text_options, speaking)
        self._watcher.start()
        if mic_error is not None:
            # The model is loaded; the watcher opens the microphone once it works.
            self._enter(ERROR, str(mic_error))
            raise mic_error
        recognizer = loaded.pipeline.recognizer
        with self._lock:
            self._damaged = None
            self._enter(READY, f"{recognizer.model} on {recognizer.provider}")
            return (self._loaded or loaded).model  # a GPU that failed since is named

    def retune(self, settings: Settings) -> None:
        """Apply the settings that need no reload (text handling, sound cues, audio kept,
        live text) to the loaded model. Live text changes wait for the next load while a
        dictation is under way."""
        with self._lock:
            self._apply_light(settings)
            if self._loaded is None:
                return
            loaded = self._loaded.retuned(settings)
            if self._take is None:
                live, as_you_go = live_options(settings)
                loaded = dataclasses.replace(loaded, as_you_go=as_you_go)
                with contextlib.suppress(RuntimeError):  # an utterance still being decoded
                    loaded.pipeline.set_live(live, self._on_partial)
            self._loaded = loaded

    def _apply_light(self, settings: Settings) -> None:
        """The settings that live beside the bundle: sound cues and the audio kept."""
        self._cues.enabled = settings.sound_cues
        self.kept_audio.set_limits(settings.history_audio_mb, settings.history_audio_days)

    def _resume_previous(self) -> bool:
        """After a failed switch, go on with the model that ran before: it is still loaded
        (a pipeline is replaced only once its successor has loaded and warmed up)."""
        with self._lock:
            previous = self._loaded
        if previous is None:
            return False
        try:
            microphone = self._io.open_microphone(previous.settings, self._warn)
        except VoxtrayError:
            return False
        with self._lock:
            current = self._loaded or previous
            self._loaded = current.with_microphone(microphone)
            self._mic_problem = None
            self._enter(READY, f"still using {current.settings.model}")
        return True

    def _gpu_failed(self, failure: GpuFailure) -> None:
        """The GPU failed while transcribing (on the recognition thread): the CPU redoes the
        audio and runs the rest of the session; the tray, HUD and `status` say why."""
        with self._lock:
            if self._loaded is not None:
                self._loaded = self._loaded.after_gpu_failure(failure)
        self._warn(
            f"the GPU failed ({failure.cause}); what it was transcribing was redone on the "
            "CPU, which runs the rest of this session"
        )

    # --- push-to-talk ------------------------------------------------------------------

    def start(self) -> bool:
        """Begin listening; False (and nothing happens) unless ready.

        A microphone that fails to start puts the state in `error` (the detail says why)
        and is retried in the background.
        """
        with self._lock:
            loaded = self._loaded
            microphone = None if loaded is None else loaded.microphone
            if self._state is not READY or loaded is None or microphone is None or self._closing:
                return False
            take = self._begin_take(loaded, microphone)
        if take is None:
            return False
        # Remembered now: text typed later must go where the user was when they pressed.
        take.target = capture_target(loaded.output)
        if loaded.as_you_go:
            self._finisher.type_as_you_go(loaded.output, take.target, loaded.text_options)
        if take.recording is not None and take.recording.problem:
            self._warn(take.recording.problem)
        self._cues.play(Cue.START)
        return True

    def _begin_take(self, loaded: Loaded, microphone: Microphone) -> Take | None:
        """Under the lock: the journal entry, recognition and the microphone started, and
        the state `listening`; None, and the state `error`, when the microphone fails."""
        started = time.perf_counter()
        self.kept_audio.begin()
        take = Take(self.journal.begin(model=loaded.model.model), started_at=started)
        # Before recognition wakes up (a refill after an idle spell keeps both cores
        # busy): the look-up has 100 ms, and a few milliseconds of CPU do it.
        self.checks.begin()
        loaded.pipeline.start(asks=lambda: self._asks(loaded, take))
        try:
            microphone.begin(
                functools.partial(self._feed, take),
                on_error=functools.partial(self._on_mic_error, take),
            )
        except (VoxtrayError, RuntimeError) as exc:
            loaded.pipeline.finish()
            if take.recording is not None:
                take.recording.discard()
            self._mic_problem = first_line(exc)
            self._enter(ERROR, f"{self._mic_problem}; retrying")
            return None
        self._take = take  # the microphone's first block waits for the lock
        self._enter(LISTENING)
        return take

    def _asks(self, loaded: Loaded, take: Take) -> TakeAsks:
        """What the take's recognition asks for its app's mode (its words, its language)."""
        return asks_in_force(loaded, take.target, self.checks.found_so_far())

    def _feed(self, take: Take, chunk: Chunk) -> None:
        """One block of the take's audio, on the microphone's thread."""
        with self._lock:
            loaded, journaling = self._loaded, self._take is take
        take.heard()
        if journaling and take.recording is not None:
            take.recording.append(chunk)
        if loaded is not None:
            self.kept_audio.hear(chunk)
            loaded.pipeline.feed(chunk)

    def _on_partial(self, committed: str, tentative: str) -> None:
        self.callbacks.partial(committed, tentative)
        self._finisher.offer(committed)

    def _on_mic_error(self, take: Take, message: str) -> None:
        # The device is gone: say so, and transcribe what was captured up to now. stop()
        # waits on the microphone thread, which is this one, so it runs on its own.
        take.mic_error = message
        self._warn(f"microphone: {message}")
        threading.Thread(target=self.stop, name="voxtray-mic-lost", daemon=True).start()

    def stop(self) -> Utterance | None:
        """End listening, transcribe the rest, store it, then type it. Blocking.

        Whatever fails on the way, the state leaves `transcribing`: the text is delivered
        even when the history cannot store it (it waits in memory and in the journal and
        is stored later), and audio that could not be transcribed stays in the journal.
        """
        with self._lock:
            loaded, take = self._loaded, self._take
            microphone = None if loaded is None else loaded.microphone
            if self._state is not LISTENING or take is None or loaded is None or microphone is None:
                return None
            self._take = None
            self._enter(TRANSCRIBING)
        self._cues.play(Cue.STOP)
        released = time.perf_counter()
        try:
            loaded.end_listening(microphone)
            if take.recording is not None:
                take.recording.finish_audio()
            record = loaded.pipeline.finish()
            found = self.checks.field()  # the focus the accessibility bus found at the press
            chosen = in_force(loaded, take.target, found, self._mode_outputs)
            utterance = self._finisher.finish(record, chosen, take, released, found)
        except Exception as exc:  # a bug must not leave the state stuck in transcribing
            log.exception("dictation failed")
            with self._lock:
                self._watcher.note_active()
            self._settle(f"dictation failed: {first_line(exc)} (the audio is kept)", microphone)
            self._warn(f"dictation failed: {first_line(exc)}")
            return None
        self._done(utterance, take, microphone)
        return utterance

    def _done(self, utterance: Utterance, take: Take, microphone: Microphone) -> None:
        with self._lock:
            self.last = utterance
            self._watcher.note_active()
        # Ready first: whoever reacts to the utterance may press again at once.
        if utterance.error or take.mic_error:
            self._cues.play(Cue.ERROR)
        if utterance.store_error:
            self._warn(f"not saved to history: {utterance.store_error}; will retry")
        self._settle(settled_detail(utterance, take.mic_error), microphone)
        self.callbacks.utterance(utterance)

    def _settle(self, detail: str, microphone: Microphone) -> None:
        """Back to ready after a dictation, or to error while the microphone is lost."""
        lost = microphone.lost
        with self._lock:
            if lost is None:
                self._enter(READY, detail)
                return
            self._mic_problem = f"{microphone.label} was lost: {lost}"
            self._enter(ERROR, f"{self._mic_problem}; retrying")

    # --- the loaded model between dictations ----------------------------------------------

    def rerun(self, entry_id: int) -> Utterance:
        """Transcribe an entry's kept audio again with the loaded model, vocabulary and
        language; the text is stored as a new entry marked `rerun_of` and not typed.

        Raises:
            NotFoundError: No audio is kept for the entry.
            BadInputError: Dictation is not ready (loading, listening or transcribing).
        """
        samples = self.audio.load(entry_id)
        with self._borrowed(f"re-running dictation {entry_id}", "re-run") as loaded:
            options = loaded.text_options
            return rerun_entry(loaded.pipeline, entry_id, samples, options, self.history)

    def test_recording(self, seconds: float) -> tuple[NDArray[np.float32], str]:
        """Record `seconds` from the open microphone and transcribe them with the loaded
        pipeline; nothing is stored or typed (the set-up window's microphone check).

        Raises:
            BadInputError: No microphone or model is ready, or a dictation is under way.
        """
        with self._borrowed("microphone test", "test the microphone", microphone=True) as loaded:
            assert loaded.microphone is not None  # checked when it was lent
            return record_and_transcribe(
                loaded.microphone, loaded.pipeline, seconds, loaded.text_options
            )

    @contextlib.contextmanager
    def _borrowed(self, detail: str, refused: str, *, microphone: bool = False) -> Iterator[Loaded]:
        """The loaded model lent, between dictations, to work that is not one."""
        with self._lock:
            loaded = self._loaded
            missing = loaded is None or (microphone and loaded.microphone is None)
            if self._state is not READY or loaded is None or missing:
                raise BadInputError(f"cannot {refused} while {self._state.value}")
            self._enter(TRANSCRIBING, detail)
        try:
            yield loaded
        finally:
            with self._lock:
                self._watcher.note_active()
                self._enter(READY)

    # --- what the watcher asks ------------------------------------------------------------

    def microphone_to_reopen(self) -> Loaded | None:
        with self._lock:
            loaded = self._loaded
            if loaded is None or self._closing:
                return None
            microphone = loaded.microphone
            lost = None if microphone is None else microphone.lost
            if self._state is READY and microphone is not None and lost is not None:
                self._mic_problem = f"{microphone.label} was lost: {lost}"
                self._enter(ERROR, f"{self._mic_problem}; retrying")
            if self._state is ERROR and self._mic_problem is not None:
                return loaded
            return None

    def microphone_failed(self, problem: str) -> None:
        with self._lock:
            if self._mic_problem != problem:
                self._mic_problem = problem
                if self._state is ERROR:
                    self._enter(ERROR, f"{problem}; retrying")

    def microphone_back(self, microphone: Microphone, opened_for: Loaded) -> bool:
        with self._lock:
            loaded = self._loaded
            if (
                self._state is not ERROR
                or self._closing
                or loaded is None
                or loaded.pipeline is not opened_for.pipeline  # a load came in between
                or loaded.microphone is not None
            ):
                return False
            self._loaded = loaded.with_microphone(microphone)
            self._mic_problem = None
            self._enter(READY, "microphone back")
            return True

    def when_ready(self, call: Callable[[Loaded], None]) -> None:
        with self._lock:
            if self._state is READY and self._loaded is not None:
                call(self._loaded)

    def retry_history(self) -> int:
        """Store text the history could not take before; returns how many are still waiting."""
        left = self.keeper.retry()
        with self._lock:
            # Asked again under the lock: a dictation may have just added one.
            if not self.keeper.waiting and self._detail.startswith("not saved to history"):
                self._enter(self._state)
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
            while self._state in (LISTENING, TRANSCRIBING):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.5))
        return True

    def close_audio(self) -> None:
        with self._lock:
            loaded = self._loaded
            microphone = None if loaded is None else loaded.microphone
            if loaded is not None and microphone is not None:
                self._loaded = loaded.with_microphone(None)
        if microphone is not None:
            microphone.close()

    def close(self) -> None:
        self._watcher.stop()
        self.close_audio()
        self._cues.close()
        for output in self._retired:
            close_output(output)
        if (loaded := self._bundle()) is not None:
            close_output(loaded.output)
        self._mode_outputs.close()
        self.retry_history()
        self.keeper.keep_at_quit()
        self.history.close()


def _kept_output(previous: Loaded | None, settings: Settings) -> TextOutput | None:
    """The output a load goes on with: one that holds a session open (the portal's, which
    a new one would ask the desktop for again) while the setting and the output stay
    usable; otherwise a new one is chosen, as the session may have changed since."""
    if previous is None or previous.settings.output != settings.output:
        return None
    output = previous.output
    return output if isinstance(output, Closable) and output.problem() is None else None
