"""The app's one History window: opened or raised, and what it asks of the app done
(typing an entry again, re-running it, learning a correction, the settings)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QWidget

from voxtray.dictation.delivery_state import capture_target
from voxtray.dictation.rerun import RerunQueue, RerunRequest, speech_models
from voxtray.errors import VoxtrayError, first_line
from voxtray.history.corrections import with_replacement, with_word
from voxtray.ui.history_window import HistoryWindow, Learn
from voxtray.ui.tray import Notice

if TYPE_CHECKING:
    from voxtray.config import Settings, SettingsStore
    from voxtray.history.store import History
    from voxtray.models.store import ModelStore
    from voxtray.output.base import TextOutput
    from voxtray.output.target import FocusTarget
    from voxtray.ui.tray import Tray
    from voxtray.ui.worker import InferenceWorker


class App(Protocol):
    """What the History window needs of the running app."""

    settings: Settings
    settings_store: SettingsStore
    store: ModelStore
    history: History
    worker: InferenceWorker
    tray: Tray

    def open_settings(self) -> None: ...
    def apply_settings(self, settings: Settings) -> None: ...
    def save_settings(self, settings: Settings) -> None: ...


def bring_up(window: QWidget | None) -> bool:
    """Raise the window if it is open; False when there is none to raise."""
    if window is None or not window.isVisible():
        return False
    window.showNormal()
    window.raise_()
    window.activateWindow()
    return True


class HistoryOpener(QObject):
    """Opens the History window for `app` (raising it when open) and serves its requests."""

    _typing_failed = Signal(str)
    _rerun_finished = Signal(object, str)  # the new entry's id or None, what went wrong

    def __init__(self, app: App, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app = app
        self.window: HistoryWindow | None = None
        self._target: FocusTarget | None = None
        self._reruns: RerunQueue | None = None
        self._typing_failed.connect(self._say_typing_failed)
        self._rerun_finished.connect(self._other_model_done)

    @Slot()
    def open(self) -> None:
        app = self.app
        output = app.worker.dictation.output()
        # The window about to take the focus is not where "Type again" should type.
        self._target = capture_target(output) if output is not None else None
        if bring_up(self.window):
            return
        retention = (app.settings.history_audio_mb, app.settings.history_audio_days)
        models = speech_models(app.store)
        window = HistoryWindow(app.history, app.worker.dictation.audio, retention, models)
        window.type_again_requested.connect(self._type_again)
        window.rerun_requested.connect(self._rerun)
        window.learn_requested.connect(self._learn)
        window.settings_requested.connect(app.open_settings)
        window.show()
        self.window = window

    def rerun_done(self, history_id: int | None) -> None:
        if self.window is not None and self.window.isVisible():
            self.window.rerun_done(history_id)

    @Slot(int, str)
    def _rerun(self, entry_id: int, model: str) -> None:
        loaded = self.app.worker.dictation.in_use()
        if not model or (loaded is not None and loaded.model == model):
            self.app.worker.rerun_requested.emit(entry_id)
            return
        ahead = self._rerun_queue().request(entry_id, model)
        if self.window is None:
            return
        if ahead is None:
            self.window.say(f"Already re-transcribing #{entry_id} with {model}")
        elif ahead:
            self.window.say(f"Re-transcribing #{entry_id} with {model} after {ahead} more…")

    def _rerun_queue(self) -> RerunQueue:
        if self._reruns is None:
            app = self.app
            self._reruns = RerunQueue(
                app.store,
                app.history,
                app.worker.dictation.audio,
                lambda: app.settings,
                self._rerun_with_done,
            )
        return self._reruns

    def _rerun_with_done(self, _request: RerunRequest, new_id: int | None, problem: str) -> None:
        self._rerun_finished.emit(new_id, problem)  # from the re-run thread to the GUI's

    @Slot(object, str)
    def _other_model_done(self, new_id: int | None, problem: str) -> None:
        if self.window is None:
            return
        self.window.rerun_done(new_id)
        if problem:
            self.window.say(f"Could not re-transcribe: {problem}")

    @Slot(str)
    def _type_again(self, text: str) -> None:
        output = self.app.worker.dictation.output()
        if output is None:
            self.app.tray.notify("Voxtray", "nothing can type yet: the model is still loading")
            return
        if self.window is not None:
            self.window.showMinimized()  # gives the focus back to the window used before
        target = self._target
        threading.Thread(
            target=self._deliver, args=(output, text, target), name="voxtray-retype", daemon=True
        ).start()

    def _deliver(self, output: TextOutput, text: str, target: FocusTarget | None) -> None:
        try:
            output.deliver(text, target)
        except VoxtrayError as exc:
            self._typing_failed.emit(first_line(exc))

    @Slot(str)
    def _say_typing_failed(self, message: str) -> None:
        self.app.tray.notify("Voxtray could not type the text again", message, Notice.WARNING)

    @Slot(str, str, str)
    def _learn(self, kind: str, heard: str, meant: str) -> None:
        app = self.app
        if kind == Learn.REPLACEMENT:
            changed = {"replacements": with_replacement(app.settings.replacements, heard, meant)}
        else:
            changed = {"vocabulary": with_word(app.settings.vocabulary, meant)}
        try:
            learned = app.settings.replace(**changed)
        except VoxtrayError as exc:  # a vocabulary already full, say
            app.tray.notify("Voxtray could not learn the correction", first_line(exc))
            return
        app.apply_settings(learned)
        on_disk, _ = app.settings_store.load()
        app.save_settings(on_disk.replace(**changed))
