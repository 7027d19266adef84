"""The inference worker: a QObject living on its own QThread that drives `Dictation`.

Wired the Qt way: `thread.started -> worker.load`, requests arrive as queued signals, and
everything the core reports comes back as signals, so the GUI thread never blocks.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app.config import Settings
from app.dictation import Callbacks, Dictation, State, Utterance
from app.errors import VoxtrayError


class InferenceWorker(QObject):
    state_changed = Signal(str, str)  # state, detail
    progress = Signal(str, int, int)  # stage, done, total (-1: unknown)
    utterance = Signal(object)  # Utterance
    warning = Signal(str)
    loaded = Signal(object)  # LoadedModel

    load_requested = Signal(object)  # Settings
    stop_requested = Signal()

    def __init__(self, make_dictation: Any, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        callbacks = Callbacks(
            state=lambda state, detail: self.state_changed.emit(state.value, detail),
            progress=lambda stage, done, total: self.progress.emit(
                stage, done, -1 if total is None else total
            ),
            utterance=self._emit_utterance,
            warning=self.warning.emit,
        )
        self.dictation: Dictation = make_dictation(callbacks)
        self.load_requested.connect(self.load)
        self.stop_requested.connect(self.stop)

    def _emit_utterance(self, utterance: Utterance) -> None:
        self.utterance.emit(utterance)

    @Slot()
    def load_current(self) -> None:
        self.load(self.settings)

    @Slot(object)
    def load(self, settings: Settings) -> None:
        self.settings = settings
        try:
            self.loaded.emit(self.dictation.load(settings))
        except VoxtrayError as exc:
            self.warning.emit(str(exc))

    # start is quick and thread-safe, so callers use it directly; stop blocks (tail,
    # last segment, typing) and runs here.
    def start(self) -> bool:
        return self.dictation.start()

    @Slot()
    def stop(self) -> None:
        self.dictation.stop()

    def toggle(self) -> None:
        if self.dictation.state is State.LISTENING:
            self.stop_requested.emit()
        else:
            self.start()


def start_worker(worker: InferenceWorker) -> QThread:
    """Move the worker to a new thread and load the model there."""
    thread = QThread()
    thread.setObjectName("voxtray-inference")
    worker.moveToThread(thread)
    thread.started.connect(worker.load_current)
    thread.start()
    return thread
