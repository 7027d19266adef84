"""The app's one History window: opened or raised, and what it asks of the app done
(typing an entry again, re-running it, learning a correction, the settings)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject, Slot

from voxtray.dictation.cleaning import cleaner_of
from voxtray.dictation.delivery_state import capture_target
from voxtray.dictation.rerun import RerunQueue, RerunRequest, speech_models
from voxtray.errors import VoxtrayError, first_line
from voxtray.history.corrections import with_replacement, with_word
from voxtray.ui.background import on_gui_thread, run_in_background
from voxtray.ui.history_window import HistoryWindow, Learn
from voxtray.ui.tray import Notice

if TYPE_CHECKING:
    from voxtray.config import Settings
    from voxtray.history.store import History
    from voxtray.models.store import ModelStore
    from voxtray.output.delivery import Delivery
    from voxtray.output.target import FocusTarget
    from voxtray.settings_writer import Changes
    from voxtray.ui.tray import Tray
    from voxtray.ui.windows import Windows
    from voxtray.ui.worker import InferenceWorker


class App(Protocol):
    """What the History window needs of the running app."""

    settings: Settings
    store: ModelStore
    history: History
    worker: InferenceWorker
    tray: Tray
    windows: Windows

    def open_settings(self) -> None: ...
    def change_settings(self, changes: Changes) -> None: ...


class HistoryOpener(QObject):
    """Opens the History window for `app` (raising it when open) and serves its requests."""

    def __init__(self, app: App, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app = app
        self._target: FocusTarget | None = None
        self._reruns: RerunQueue | None = None

    @property
    def window(self) -> HistoryWindow | None:
        return self.app.windows.find(HistoryWindow)

    @Slot()
    def open(self) -> None:
        output = self.app.worker.output()
        # The window about to take the focus is not where "Type again" should type.
        self._target = capture_target(output) if output is not None else None
        self.app.windows.open(HistoryWindow, self._new_window)

    def _new_window(self) -> HistoryWindow:
        app = self.app
        retention = (app.settings.history_audio_mb, app.settings.history_audio_days)
        models = speech_models(app.store)
        window = HistoryWindow(
            app.history,
            app.worker.kept_audio,
            retention,
            models,
            cleaner=lambda: cleaner_of(self.app.settings),
            cleanup_wait_s=app.settings.cleanup_timeout_s,
        )
        window.type_again_requested.connect(self._type_again)
        window.rerun_requested.connect(self._rerun)
        window.learn_requested.connect(self._learn)
        window.settings_requested.connect(app.open_settings)
        return window

    def rerun_done(self, history_id: int | None) -> None:
        if (window := self.app.windows.showing(HistoryWindow)) is not None:
            window.rerun_done(history_id)

    @Slot(int, str)
    def _rerun(self, entry_id: int, model: str) -> None:
        loaded = self.app.worker.in_use()
        if not model or (loaded is not None and loaded.model == model):
            self.app.worker.rerun_requested.emit(entry_id)
            return
        ahead = self._rerun_queue().request(entry_id, model)
        if (window := self.window) is None:
            return
        if ahead is None:
            window.say(f"Already re-transcribing #{entry_id} with {model}")
        elif ahead:
            window.say(f"Re-transcribing #{entry_id} with {model} after {ahead} more…")

    def _rerun_queue(self) -> RerunQueue:
        if self._reruns is None:
            app = self.app
            self._reruns = RerunQueue(
                app.store,
                app.history,
                app.worker.kept_audio,
                lambda: app.settings,
                on_gui_thread(self._other_model_done),  # called on the re-run thread
            )
        return self._reruns

    def _other_model_done(self, _request: RerunRequest, new_id: int | None, problem: str) -> None:
        if (window := self.window) is None:
            return
        window.rerun_done(new_id)
        if problem:
            window.say(f"Could not re-transcribe: {problem}")

    @Slot(str)
    def _type_again(self, text: str) -> None:
        output = self.app.worker.output()
        if output is None:
            self.app.tray.notify("Voxtray", "nothing can type yet: the model is still loading")
            return
        if (window := self.window) is not None:
            window.showMinimized()  # gives the focus back to the window used before
        target = self._target
        run_in_background(lambda: output.deliver(text, target), self._typed, "voxtray-retype")

    def _typed(self, result: Delivery | Exception) -> None:
        if isinstance(result, Exception):
            message = first_line(result)
            self.app.tray.notify("Voxtray could not type the text again", message, Notice.WARNING)

    @Slot(str, str, str)
    def _learn(self, kind: str, heard: str, meant: str) -> None:
        app = self.app
        if kind == Learn.REPLACEMENT:
            changed = {"replacements": with_replacement(app.settings.replacements, heard, meant)}
        else:
            changed = {"vocabulary": with_word(app.settings.vocabulary, meant)}
        try:
            app.change_settings(changed)
        except VoxtrayError as exc:  # a vocabulary already full, say
            app.tray.notify("Voxtray could not learn the correction", first_line(exc))
