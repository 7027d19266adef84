"""The tray application: builds the tray, the HUD and the inference worker, and wires them
to the parts that own the rest: `Windows` (one of each kind, raised, deleted in order),
`ControlBridge` (the control socket and the hotkey), `SettingsWriter` (settings.json) and
`HistoryOpener` (the History window). Nothing here does inference or audio; that is all
in the core.

Signals from other threads land on `@Slot` methods of a QObject of the GUI thread, so Qt
runs them there: the worker's reach `GuiReports` (see app/voxtray/ui/worker.py), the
control socket's reach `VoxtrayApp` through `ControlBridge`. Never on a lambda or a method
of a non-QObject, which would run in the emitting thread.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from voxtray.choices import DictationState, Engine
from voxtray.config import Key, Settings, SettingsStore
from voxtray.control.server import ControlServer
from voxtray.dictation.io import OutputFactory
from voxtray.dictation.loaded import LoadedModel
from voxtray.dictation.session import Dictation
from voxtray.dictation.utterance import Utterance
from voxtray.errors import VoxtrayError, first_line
from voxtray.history.store import History
from voxtray.models.progress import InstallProgress
from voxtray.models.store import ModelStore
from voxtray.settings_schema import Applies, keys_that
from voxtray.settings_writer import (
    RELOAD_KEYS,
    Changes,
    SettingsWriter,
    any_changed,
    keep_running_model,
)
from voxtray.ui.control_bridge import ControlBridge
from voxtray.ui.download_window import DownloadWindow
from voxtray.ui.history_opener import HistoryOpener
from voxtray.ui.hud import Hud
from voxtray.ui.install_words import percent
from voxtray.ui.plain_words import plain
from voxtray.ui.platform import hud_can_show
from voxtray.ui.tray import Notice, Tray, TrayMenu
from voxtray.ui.windows import Windows
from voxtray.ui.worker import GuiReports, InferenceWorker, start_worker

if TYPE_CHECKING:
    from voxtray.audio.backend import AudioBackend

HOTKEY_KEYS = keys_that(Applies.HOTKEY)
QUIT_FINISH_S = 60.0
"""How long quitting waits for the dictation in progress to be typed and stored."""


class VoxtrayApp(QObject):
    """Owns the widgets and the worker thread for one running instance."""

    def __init__(
        self,
        store: ModelStore,
        settings_store: SettingsStore,
        history: History,
        *,
        sd_module: AudioBackend | None = None,
        output_factory: OutputFactory | None = None,
        force_window: bool = False,
        use_hotkeys: bool = True,
        control: ControlServer | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.writer = SettingsWriter(settings_store)
        self.history = history
        self.settings, warnings = settings_store.load()
        for warning in warnings:  # also on stderr: a notice bubble goes by in seconds
            print(f"voxtray: {warning}", file=sys.stderr, flush=True)
        self._new_api_key = False
        self._switching: Settings | None = None  # asked for, written once it has loaded
        self._quitting = False
        self.windows = Windows()
        # No Qt parent: it holds the app, and a parent link besides would let garbage
        # collection of that cycle delete it twice (a crash when the app is torn down).
        self.histories = HistoryOpener(self)
        self.menu = TrayMenu()
        self.tray = Tray(self.menu, force_window=force_window)
        self.hud = Hud(self.settings.gpu_index)
        self.worker = InferenceWorker(
            lambda callbacks: Dictation(
                store, history, callbacks, sd_module=sd_module, output_factory=output_factory
            ),
            self.settings,
        )
        self.hud.level_source = self.worker.current_level
        self.reports = GuiReports(self.worker, self)
        self.commands = ControlBridge(self.worker, self.tray.notify)
        self._connect()
        self.worker_thread = start_worker(self.worker)
        if use_hotkeys:
            self.commands.start_hotkeys(self.settings)
        self.running = self.commands.serve(control)
        self.menu.hud_action.setChecked(self.settings.hud_enabled)
        self.menu.hud_action.setVisible(hud_can_show(QGuiApplication.platformName()))
        self.menu.hud_details_action.setVisible(self.menu.hud_action.isVisible())
        self._refresh_recent()
        for warning in warnings:
            self.tray.notify("Voxtray settings", warning)
        for warning in history.warnings:
            self.tray.notify("Voxtray history", warning)
        self._keep_start_at_login()
        if not self.settings.first_run_done:
            QTimer.singleShot(0, self.open_setup)

    def _keep_start_at_login(self) -> None:
        from voxtray.desktop.autostart import keep_start_at_login

        try:
            keep_start_at_login(self.settings.start_at_login)
        except VoxtrayError as exc:
            self.tray.notify("Voxtray could not set up start at login", first_line(exc))

    def _connect(self) -> None:
        self.reports.state_changed.connect(self._on_state)
        self.reports.progress.connect(self._on_progress)
        self.reports.utterance.connect(self._on_utterance)
        self.reports.warning.connect(self._on_warning)
        self.reports.loaded.connect(self._on_loaded)
        self.reports.load_failed.connect(self._on_load_failed)
        self.reports.rerun_done.connect(self._on_rerun)
        self.reports.partial.connect(self.hud.show_partial)
        self.menu.toggle_requested.connect(self.worker.toggle)
        self.menu.settings_requested.connect(self.open_settings)
        self.menu.selftest_requested.connect(self.open_selftest)
        self.menu.models_requested.connect(self.open_models)
        self.menu.setup_requested.connect(self.open_setup)
        self.menu.history_requested.connect(self.open_history)
        self.menu.hud_toggled.connect(self._show_hud)
        self.menu.hud_details_toggled.connect(self.hud.set_details)
        self.menu.recent_chosen.connect(self._copy_recent)
        self.menu.rerun_chosen.connect(self.worker.rerun_requested.emit)
        self.menu.quit_requested.connect(self.quit)
        self.commands.show_requested.connect(self._bring_forward)
        self.commands.history_requested.connect(self.open_history)
        self.commands.quit_requested.connect(self.quit)

    # --- events from the worker, through GuiReports: on the GUI thread -------------------

    @Slot(object, str)
    def _on_state(self, state: DictationState, detail: str) -> None:
        self.tray.set_state(state, detail)
        self.hud.set_state(state, detail)
        if state is DictationState.READY:  # dictations recovered or stored after a retry
            self._refresh_recent()

    @Slot(object)
    def _on_progress(self, progress: InstallProgress) -> None:
        said = f"{progress.said()}{percent(progress)}"
        self.tray.set_state(DictationState.LOADING, said)
        self.hud.set_state(DictationState.LOADING, said)
        if progress.installing:
            self._show_install(progress)

    def _show_install(self, progress: InstallProgress) -> None:
        from voxtray.ui.first_run import FirstRunWindow

        if self.windows.find(FirstRunWindow) is None and not self.settings.first_run_done:
            self.open_setup()  # the install can report before the set-up window opened
        if (setup := self.windows.showing(FirstRunWindow)) is not None:
            setup.show_install(progress)
            return
        download = self.windows.find(DownloadWindow)
        if download is None:
            model = (self._switching or self.settings).model
            download = self.windows.show(DownloadWindow, DownloadWindow(model))
        download.progress.show_progress(progress)

    def _install_over(self) -> None:
        from voxtray.ui.first_run import FirstRunWindow

        if (setup := self.windows.find(FirstRunWindow)) is not None:
            setup.install_over()
        self.windows.close(DownloadWindow)

    @Slot(object)
    def _on_utterance(self, utterance: Utterance) -> None:
        self.hud.show_utterance(utterance)
        self._refresh_recent()
        if utterance.error:
            self.tray.notify(
                "Voxtray could not type the text", f"{utterance.error} (kept in history)"
            )

    @Slot(str)
    def _on_warning(self, message: str) -> None:
        self.tray.notify("Voxtray", message)

    @Slot(object)
    def _on_loaded(self, loaded: LoadedModel) -> None:
        self._install_over()
        switched, self._switching = self._switching, None
        running = self.worker.in_use()
        if switched is not None and running is not None:
            try:
                self.writer.write_loaded(switched, running)
            except VoxtrayError as exc:
                self.tray.notify("Voxtray settings", plain(first_line(exc)))
        extra = loaded.extra
        self.hud.set_engine(
            loaded.model,
            loaded.engine,
            loaded.provider,
            extra.get("device", ""),
            fallback=extra.get("fallback", ""),
        )

    @Slot(object, str)
    def _on_load_failed(self, asked: Settings, message: str) -> None:
        self._install_over()
        if self._switching is not asked:
            self.tray.notify("Voxtray", plain(message))
            return
        self._switching = None
        running = self.worker.in_use()
        if running is None:  # nothing ran before: the error state says what is wrong
            self.tray.notify("Voxtray could not load the model", plain(message))
            return
        self.settings = keep_running_model(asked, running)
        self.tray.notify(
            f"Voxtray could not switch to {asked.model}",
            f"{plain(message)} Still using {running.model}; nothing else changed.",
        )

    @Slot()
    def _bring_forward(self) -> None:
        self.tray.bring_forward()

    def _refresh_recent(self) -> None:
        try:
            found = self.history.recent(10)
        except (VoxtrayError, RuntimeError):
            return  # unreadable for now (locked, full disk): the menu keeps what it shows
        entries = [(entry.id, entry.text) for entry in found]
        audio = self.worker.kept_audio
        self.menu.set_recent(entries, frozenset(i for i, _ in entries if audio.has(i)))

    @Slot(object)
    def _on_rerun(self, utterance: Utterance) -> None:
        self.hud.show_utterance(utterance)
        self._refresh_recent()
        if utterance.history_id is not None:
            self._copy_recent(utterance.history_id)
        self.histories.rerun_done(utterance.history_id)
        self.tray.notify("Voxtray re-run (copied)", utterance.text or "(no words)", Notice.INFO)

    @Slot(int)
    def _copy_recent(self, history_id: int) -> None:
        try:
            entry = self.history.get(history_id)
        except (VoxtrayError, RuntimeError) as exc:
            self.tray.notify("Voxtray history", first_line(exc))
            return
        clipboard = QGuiApplication.clipboard()
        if entry is not None and clipboard is not None:
            clipboard.setText(entry.text)
            self.tray.notify("Copied", _preview(entry.text), Notice.INFO)

    @Slot(bool)
    def _show_hud(self, visible: bool) -> None:
        if visible and hud_can_show(QGuiApplication.platformName()):
            self.hud.place()
            self.hud.show()
        else:
            self.hud.hide()
        if visible != self.settings.hud_enabled:
            self.change_settings({"hud_enabled": visible})

    # --- settings ------------------------------------------------------------------------

    def change_settings(self, changes: Changes) -> None:
        """Settings changed outside the settings window (the tray, set-up, History, the
        Model manager): used from now on, and written over the file.

        Raises:
            SettingsError: for a value its setting refuses; nothing is changed then.
        """
        self.apply_settings(self.settings.replace(**changes))
        self._write(changes)

    def _write(self, changes: Changes) -> None:
        try:
            self.writer.write(changes)
        except VoxtrayError as exc:
            self.tray.notify("Voxtray settings", plain(first_line(exc)))

    @Slot(object, object)
    def _window_saved(self, _settings: Settings, changes: Changes) -> None:
        """The settings window wrote `changes` (a new model waits for its load)."""
        self.apply_settings(self.settings.replace(**changes))

    @Slot()
    def _api_key_saved(self) -> None:
        self._new_api_key = True  # the remote engine must reload to use it

    @Slot(object)
    def apply_settings(self, settings: Settings) -> None:
        """Use `settings` from now on. A model switch is written to settings.json only once
        the new model has loaded and warmed up; until then the running one serves."""
        previous, self.settings = self.settings, settings
        new_key = self._new_api_key and settings.engine is Engine.REMOTE
        self._new_api_key = False
        if any_changed(previous, settings, RELOAD_KEYS) or new_key:
            self._switching = settings
            self.worker.load_requested.emit(settings)
        elif previous != settings:
            self.worker.retune_requested.emit(settings)
        if any_changed(previous, settings, HOTKEY_KEYS):
            self.commands.restart_hotkeys(settings)
        self.menu.hud_action.setChecked(settings.hud_enabled)
        if any_changed(previous, settings, (Key.START_AT_LOGIN,)):
            from voxtray.desktop.autostart import launch_command, set_start_at_login

            try:
                set_start_at_login(settings.start_at_login, launch_command())
            except VoxtrayError as exc:
                self.tray.notify("Voxtray could not change start at login", first_line(exc))

    # --- windows -------------------------------------------------------------------------

    @Slot()
    def open_settings(self) -> None:
        from voxtray.audio.inputs import list_input_devices
        from voxtray.ui.settings.window import SettingsWindow

        if self.windows.raise_open(SettingsWindow):
            return
        try:
            microphones = list_input_devices()
        except Exception:  # no PortAudio: the default device only
            microphones = []
        window = SettingsWindow(
            self.settings,
            self.store,
            self.writer,
            microphones=microphones,
            level_source=self.worker.current_level,
            defer_reload=True,
        )
        window.api_key_saved.connect(self._api_key_saved)
        window.saved.connect(self._window_saved)
        window.selftest_requested.connect(self.open_selftest)
        window.models_requested.connect(self.open_models)
        self.windows.show(SettingsWindow, window)

    @Slot()
    def open_selftest(self) -> None:
        from voxtray.ui.selftest_dialog import SelfTestDialog

        if self.windows.raise_open(SelfTestDialog):
            return
        model = self.store.get(self.settings.model)
        if model is None:
            self.tray.notify("Voxtray", f"{self.settings.model} is not installed yet")
            return
        dialog = SelfTestDialog(model, self.settings.provider, self.settings.gpu_index)
        self.windows.show(SelfTestDialog, dialog)

    @Slot()
    def open_models(self) -> None:
        from voxtray.inference.engines import EngineChoice
        from voxtray.ui.model_manager import ModelManager

        if self.windows.raise_open(ModelManager):
            return
        manager = ModelManager(
            self.store,
            EngineChoice.of(self.settings),
            active=self.settings.model,
            budget_ms=self.settings.recommend_budget_ms,
        )
        manager.budget_changed.connect(self._save_budget)
        self.windows.show(ModelManager, manager)

    @Slot(int)
    def _save_budget(self, budget_ms: int) -> None:
        self.change_settings({"recommend_budget_ms": budget_ms})

    @Slot()
    def open_setup(self) -> None:
        from voxtray.ui.first_run import FirstRunWindow, setup_window

        if self.windows.raise_open(FirstRunWindow):
            return
        window = setup_window(
            self.settings,
            self.store,
            self.worker,
            self._setup_done,
            self.open_models,
            self.open_selftest,
        )
        self.windows.show(FirstRunWindow, window)

    def _setup_done(self, chosen: Settings) -> None:
        if self._quitting:  # quit with the window open: it shows again next time
            return
        # Only what the window sets: its copy of the rest may be older than a change made
        # in the settings window meanwhile.
        self.change_settings({"hotkey": chosen.hotkey, "first_run_done": True})

    @Slot()
    def open_history(self) -> None:
        self.histories.open()

    # --- shutdown -------------------------------------------------------------------------

    @Slot()
    def quit(self) -> None:
        """Finish the dictation in progress (stop, transcribe, store, type), then exit."""
        if self._quitting:
            return
        self._quitting = True
        self.commands.stop_hotkeys()
        self.worker.finish(QUIT_FINISH_S)
        self.commands.stop_serving()
        self.worker_thread.quit()
        self.worker_thread.wait(10_000)
        self.worker.close()
        self.hud.close()
        self.tray.hide()
        app = QApplication.instance()
        if app is not None:
            app.quit()

    def dispose(self) -> None:
        """Delete the windows and Qt objects this app made, once its event loop is over:
        they refer to one another, and a garbage collection deleting them crashes Qt."""
        others: list[QObject | None] = [self.tray.window, self.tray.icon, self.menu.menu]
        others += [self.menu, self.histories, self.commands, self.hud]
        if not self.worker_thread.isRunning():  # Qt aborts on deleting a running thread
            others += [self.worker, self.worker_thread]
        # The reports first: what they still have queued for the GUI thread goes with them.
        self.windows.dispose([self.reports, *others, self])


def _preview(text: str) -> str:
    return (text if len(text) <= 80 else text[:77] + "…") or "(empty)"
