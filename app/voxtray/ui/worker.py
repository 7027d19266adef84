"""The inference worker: a QObject living on its own QThread that drives `Dictation`.

Wired the Qt way: `thread.started -> worker.load`, requests arrive as queued signals, and
everything the core reports comes back as signals, so the GUI thread never blocks.

The worker's reports are emitted from the worker thread, the microphone thread or the
control thread. Qt queues a signal into the receiver's thread only when the receiver is a
slot of a QObject; a lambda or a method of a non-QObject runs in the emitting thread, where
touching a widget crashes (and so, in PySide6, does a `@Slot` overridden in a subclass).
So the GUI never connects to the worker itself: `GuiReports`, created in the GUI thread,
receives every report on its own slots and re-emits it there, where any slot is safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QThread, Signal, Slot

from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.loaded import LoadedModel
from voxtray.dictation.session import Dictation
from voxtray.dictation.utterance import Utterance
from voxtray.errors import DamagedModelError, ExitCode, VoxtrayError, WrongEngineError
from voxtray.models.progress import InstallProgress
from voxtray.output.tools import ConsentNeeded
from voxtray.ui.install_words import reinstall_words

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from voxtray.history.audio import AudioArchive
    from voxtray.output.base import TextOutput


ASK_AGAIN = "the tray menu's Set up…, at its Typing step, asks the desktop again"


def worded(exc: VoxtrayError) -> str:
    """A failure as the windows say it: the core's words, and where the remedy is a
    window's, which one (a damaged model, typing's permission)."""
    if isinstance(exc, DamagedModelError):
        return f"{exc}; {reinstall_words(exc.model)}"
    if isinstance(exc, ConsentNeeded):
        return f"{exc}; {ASK_AGAIN}"
    if isinstance(exc, WrongEngineError):
        return f"{exc}; choose Engine: {exc.engine} (or auto) in Settings, Model"
    return str(exc)


class InferenceWorker(QObject):
    """The GUI's one handle on the dictation: requests as queued signals, reports as
    signals, and the few thread-safe questions and calls below. Windows ask these, never
    the `Dictation` itself (`dictation` is its owner's, and tests')."""

    state_changed = Signal(object, str)  # DictationState, detail
    progress = Signal(object)  # InstallProgress
    utterance = Signal(object)  # Utterance
    warning = Signal(str)
    loaded = Signal(object)  # LoadedModel
    load_failed = Signal(object, str)  # the Settings asked for, why (the previous model runs on)
    rerun_done = Signal(object)  # Utterance, from a history entry's kept audio
    partial = Signal(str, str)  # committed, tentative: live text while listening

    load_requested = Signal(object)  # Settings
    retune_requested = Signal(object)  # Settings whose changes need no reload
    stop_requested = Signal()
    rerun_requested = Signal(int)  # history id

    def __init__(
        self, make_dictation: Callable[[Callbacks], Dictation], settings: Settings
    ) -> None:
        super().__init__()
        self.settings = settings
        callbacks = Callbacks(
            state=self._emit_state,
            progress=self._emit_progress,
            utterance=self._emit_utterance,
            warning=self._emit_warning,
            partial=self._emit_partial,
            worded=worded,
        )
        self.dictation: Dictation = make_dictation(callbacks)
        self.load_requested.connect(self.load)
        self.retune_requested.connect(self.retune)
        self.stop_requested.connect(self.stop)
        self.rerun_requested.connect(self.rerun)

    # The core calls these from whichever thread made the change.
    def _emit_state(self, state: DictationState, detail: str) -> None:
        self.state_changed.emit(state, detail)

    def _emit_progress(self, progress: InstallProgress) -> None:
        self.progress.emit(progress)

    def _emit_utterance(self, utterance: Utterance) -> None:
        self.utterance.emit(utterance)

    def _emit_warning(self, message: str) -> None:
        self.warning.emit(message)

    def _emit_partial(self, committed: str, tentative: str) -> None:
        self.partial.emit(committed, tentative)

    # --- what the GUI asks of the dictation: any thread ----------------------------------

    def current_level(self) -> float | None:
        """The current microphone's level in dBFS (None when none is open)."""
        return self.dictation.current_level()

    @property
    def listening(self) -> bool:
        return self.dictation.state is DictationState.LISTENING

    def status(self) -> dict[str, object]:
        """What `voxtray status` answers."""
        return self.dictation.status()

    def refusal(self) -> tuple[str, ExitCode] | None:
        """Why a dictation cannot start now, and its exit code; None when it can."""
        return self.dictation.refusal()

    def in_use(self) -> Settings | None:
        """The settings the loaded model runs on (None until one has loaded)."""
        return self.dictation.in_use()

    def output(self) -> TextOutput | None:
        """The loaded output, to type text again (None until a model has loaded)."""
        return self.dictation.output()

    @property
    def kept_audio(self) -> AudioArchive:
        """The audio kept for history entries."""
        return self.dictation.audio

    def test_recording(self, seconds: float) -> tuple[NDArray[np.float32], str]:
        """Record `seconds` from the open microphone and transcribe them; blocking."""
        return self.dictation.test_recording(seconds)

    def finish(self, timeout_s: float) -> bool:
        """Refuse new dictations and finish the one in progress; blocking."""
        return self.dictation.finish(timeout=timeout_s)

    def close(self) -> None:
        """Close the microphone and the history, once the worker's thread has ended."""
        self.dictation.close()

    @Slot()
    def load_current(self) -> None:
        self.load(self.settings)

    @Slot(object)
    def load(self, settings: Settings) -> None:
        self.settings = settings
        try:
            self.loaded.emit(self.dictation.load(settings))
        except VoxtrayError as exc:
            if self.dictation.in_use() is settings:  # loaded; only the microphone failed
                self.loaded.emit(self.dictation.loaded)
                self.warning.emit(str(exc))
            else:
                self.load_failed.emit(settings, worded(exc))

    @Slot(object)
    def retune(self, settings: Settings) -> None:
        self.settings = settings
        self.dictation.retune(settings)

    # start is quick and thread-safe, so callers use it directly; stop blocks (tail,
    # last segment, typing) and runs here.
    def start(self) -> bool:
        return self.dictation.start()

    @Slot()
    def stop(self) -> None:
        self.dictation.stop()

    @Slot(int)
    def rerun(self, history_id: int) -> None:
        try:
            self.rerun_done.emit(self.dictation.rerun(history_id))
        except VoxtrayError as exc:
            self.warning.emit(str(exc))

    @Slot()
    def toggle(self) -> None:
        if self.listening:
            self.stop_requested.emit()
        else:
            self.start()


class GuiReports(QObject):
    """The worker's reports, re-emitted in the thread this object lives in (create it in
    the GUI thread). Anything may be connected to these signals, lambdas included.

    Not meant to be subclassed: its slots must stay the ones Qt registered.
    """

    state_changed = Signal(object, str)  # DictationState, detail
    progress = Signal(object)  # InstallProgress
    utterance = Signal(object)  # Utterance
    warning = Signal(str)
    loaded = Signal(object)  # LoadedModel
    load_failed = Signal(object, str)  # Settings, why
    rerun_done = Signal(object)  # Utterance
    partial = Signal(str, str)  # committed, tentative

    def __init__(self, worker: InferenceWorker, parent: QObject | None = None) -> None:
        super().__init__(parent)
        worker.state_changed.connect(self._state)
        worker.progress.connect(self._progress)
        worker.utterance.connect(self._utterance)
        worker.warning.connect(self._warning)
        worker.loaded.connect(self._loaded)
        worker.load_failed.connect(self._load_failed)
        worker.rerun_done.connect(self._rerun_done)
        worker.partial.connect(self._partial)

    @Slot(object, str)
    def _state(self, state: DictationState, detail: str) -> None:
        self.state_changed.emit(state, detail)

    @Slot(object)
    def _progress(self, progress: InstallProgress) -> None:
        self.progress.emit(progress)

    @Slot(object)
    def _utterance(self, utterance: Utterance) -> None:
        self.utterance.emit(utterance)

    @Slot(str)
    def _warning(self, message: str) -> None:
        self.warning.emit(message)

    @Slot(object)
    def _loaded(self, loaded: LoadedModel) -> None:
        self.loaded.emit(loaded)

    @Slot(object, str)
    def _load_failed(self, settings: Settings, message: str) -> None:
        self.load_failed.emit(settings, message)

    @Slot(object)
    def _rerun_done(self, utterance: Utterance) -> None:
        self.rerun_done.emit(utterance)

    @Slot(str, str)
    def _partial(self, committed: str, tentative: str) -> None:
        self.partial.emit(committed, tentative)


def start_worker(worker: InferenceWorker) -> QThread:
    """Move the worker to a new thread and load the model there."""
    thread = QThread()
    thread.setObjectName("voxtray-inference")
    worker.moveToThread(thread)
    thread.started.connect(worker.load_current)
    thread.start()
    return thread
