"""The tray application: wires the tray, HUD, settings, hotkeys and control socket to the
inference worker. Nothing here does inference or audio; that is all in the core.

Signals from other threads land on `@Slot` methods of a QObject of the GUI thread, so Qt
runs them there: the worker's reach `GuiReports` (see app/voxtray/ui/worker.py), the control
socket's reach `VoxtrayApp`. Never on a lambda or a method of a non-QObject, which would
run in the emitting thread.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QWidget

from voxtray.choices import DictationState, Engine
from voxtray.config import Key, Settings, SettingsStore
from voxtray.control.server import ControlServer, StartupHandler
from voxtray.dictation.loaded import LoadedModel
from voxtray.dictation.session import Dictation
from voxtray.dictation.utterance import Utterance
from voxtray.errors import VoxtrayError, first_line
from voxtray.history.store import History
from voxtray.models.store import ModelStore
from voxtray.settings_schema import Applies, keys_that
from voxtray.ui.download_window import DownloadWindow, is_install_stage
from voxtray.ui.history_opener import HistoryOpener, bring_up
from voxtray.ui.hud import Hud
from voxtray.ui.plain_words import plain
from voxtray.ui.platform import hud_can_show
from voxtray.ui.teardown import close_and_delete
from voxtray.ui.tray import Notice, Tray, TrayMenu
from voxtray.ui.worker import GuiReports, InferenceWorker, start_worker

if TYPE_CHECKING:
    from voxtray.ui.first_run import FirstRunWindow
    from voxtray.ui.history_window import HistoryWindow

RELOAD_KEYS = keys_that(Applies.RELOAD)
HOTKEY_KEYS = keys_that(Applies.HOTKEY)
QUIT_FINISH_S = 60.0
"""How long quitting waits for the dictation in progress to be typed and stored."""


class VoxtrayApp(QObject):
    """Owns the widgets and the worker thread for one running instance."""

    show_requested = Signal()
    history_requested = Signal()
    quit_requested = Signal()

    def __init__(
        self,
        store: ModelStore,
        settings_store: SettingsStore,
        history: History,
        *,
        sd_module: Any = None,
        output_factory: Any = None,
        force_window: bool = False,
        use_hotkeys: bool = True,
        control: ControlServer | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.settings_store = settings_store
        self.history = history
        self.settings, warnings = settings_store.load()
        for warning in warnings:  # also on stderr: a notice bubble goes by in seconds
            print(f"voxtray: {warning}", file=sys.stderr, flush=True)
        self._new_api_key = False
        self._switching: Settings | None = None  # asked for, written once it has loaded
        self._dialog: QWidget | None = None
        self._selftest: QWidget | None = None
        self._models: QWidget | None = None
        self._setup: FirstRunWindow | None = None
        self._download: DownloadWindow | None = None
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
        self._connect()
        self.worker_thread = start_worker(self.worker)
        self.hotkeys: Any = None
        self._quitting = False
        if use_hotkeys:
            self._start_hotkeys()
        if control is None:
            control = ControlServer(self.handle_control)
            self.running = control.start()
        else:
            self._take_over(control)
            self.running = True
        self.control = control
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

    def _take_over(self, control: ControlServer) -> None:
        if not isinstance(control.handler, StartupHandler):
            control.handler = self.handle_control
            return
        # Run once the event loop does: quitting before it runs would be lost.
        for command in control.handler.hand_over(self.handle_control):
            slots = {"quit": self.quit, "history": self.open_history}
            slot = slots.get(command, self._bring_forward)
            QTimer.singleShot(0, slot)

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
        self.show_requested.connect(self._bring_forward)
        self.history_requested.connect(self.open_history)
        self.quit_requested.connect(self.quit)

    # --- events from the worker, through GuiReports: on the GUI thread -------------------

    @Slot(object, str)
    def _on_state(self, state: DictationState, detail: str) -> None:
        self.tray.set_state(state, detail)
        self.hud.set_state(state, detail)
        if state is DictationState.READY:  # dictations recovered or stored after a retry
            self._refresh_recent()

    @Slot(str, int, int)
    def _on_progress(self, stage: str, done: int, total: int) -> None:
        amount = f" {100 * done // total}%" if total > 0 else ""
        self.tray.set_state(DictationState.LOADING, f"{stage}{amount}")
        self.hud.set_state(DictationState.LOADING, f"{stage}{amount}")
        if is_install_stage(stage):
            self._show_install(stage, done, total)

    def _show_install(self, stage: str, done: int, total: int) -> None:
        if self._setup is None and not self.settings.first_run_done:
            self.open_setup()  # the install can report before the set-up window opened
        if self._setup is not None and self._setup.isVisible():
            self._setup.show_install(stage, done, total)
            return
        if self._download is None:
            self._download = DownloadWindow((self._switching or self.settings).model)
            self._download.show()
        self._download.progress.show_progress(stage, done, total)

    def _install_over(self) -> None:
        if self._setup is not None:
            self._setup.install_over()
        if self._download is not None:
            self._download.close()
            self._download.deleteLater()
            self._download = None

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
        if switched is not None and self.worker.dictation.in_use() is switched:
            self.save_settings(switched)
        extra = loaded.extra
        self.hud.set_engine(
            loaded.model,
            loaded.engine,
            loaded.provider,
            extra.get("device", ""),
            fallback=extra.get("fallback", ""),
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
        audio = self.worker.dictation.audio
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
            self._remember(hud_enabled=visible)

    def _remember(self, **changed: object) -> None:
        """Settings changed outside the settings window: used now, saved over the file's."""
        self.settings = self.settings.replace(**changed)
        on_disk, _ = self.settings_store.load()
        self.save_settings(on_disk.replace(**changed))

    def save_settings(self, settings: Settings) -> None:
        try:
            self.settings_store.save(settings)
        except VoxtrayError as exc:
            self.tray.notify("Voxtray settings", plain(first_line(exc)))

    # --- hotkeys and control -------------------------------------------------------------

    def _start_hotkeys(self) -> None:
        from voxtray.hotkeys import (
            PushToTalk,
            check_conflicts,
            choose_backend,
            parse_hotkey,
            x11_grab_conflict,
        )

        try:
            backend = choose_backend(self.settings.hotkey_backend)
            hotkey = parse_hotkey(self.settings.hotkey)
            talk = PushToTalk(
                self._hotkey_down, self.worker.stop_requested.emit, mode=self.settings.hotkey_mode
            )
            backend.start(hotkey, talk.pressed, talk.released)
        except (VoxtrayError, ValueError) as exc:
            self.tray.notify("Voxtray hotkey", f"{exc}; bind `voxtray toggle` to a key instead")
            return
        self.hotkeys = backend
        # Another program holding the same combination would react to it too.
        conflict = x11_grab_conflict(hotkey) if backend.name == "pynput" else None
        conflict = conflict or check_conflicts(hotkey)
        if conflict:
            self.tray.notify("Voxtray hotkey", conflict)

    def _hotkey_down(self) -> None:
        self.worker.start()

    def handle_control(self, request: dict[str, Any]) -> dict[str, Any]:
        """Runs on the control thread: only thread-safe calls and queued signals here."""
        command = request["cmd"]
        dictation = self.worker.dictation
        if command in ("start", "toggle"):
            listening = dictation.state is DictationState.LISTENING
            if command == "start" or not listening:
                refused = None if self.worker.start() else dictation.refusal()
                if refused is not None:
                    message, code = refused
                    return {**dictation.status(), "ok": False, "error": message,
                            "exit_code": int(code)}  # fmt: skip
            else:
                self.worker.stop_requested.emit()
        elif command == "stop":
            self.worker.stop_requested.emit()
        elif command == "show":
            self.show_requested.emit()
        elif command == "history":
            self.history_requested.emit()
        elif command == "quit":
            self.quit_requested.emit()
        return dictation.status()

    # --- dialogs -----------------------------------------------------------------------

    @Slot()
    def open_settings(self) -> None:
        from voxtray.audio.inputs import list_input_devices
        from voxtray.ui.settings.window import SettingsWindow

        if bring_up(self._dialog):
            return
        try:
            microphones = list_input_devices()
        except Exception:  # no PortAudio: the default device only
            microphones = []
        dialog = SettingsWindow(
            self.settings,
            self.store,
            self.settings_store,
            microphones=microphones,
            level_source=self.worker.current_level,
            defer_reload=True,
        )
        dialog.api_key_saved.connect(self._api_key_saved)
        dialog.saved.connect(self.apply_settings)
        dialog.selftest_requested.connect(self.open_selftest)
        dialog.models_requested.connect(self.open_models)
        dialog.show()
        self._dialog = dialog

    @Slot()
    def _api_key_saved(self) -> None:
        self._new_api_key = True  # the remote engine must reload to use it

    @Slot(object)
    def apply_settings(self, settings: Settings) -> None:
        """Settings the window saved. A model switch is written to settings.json only once
        the new model has loaded and warmed up; until then the running one serves."""
        previous, self.settings = self.settings, settings
        new_key = self._new_api_key and settings.engine is Engine.REMOTE
        self._new_api_key = False
        if _changed(previous, settings, RELOAD_KEYS) or new_key:
            self._switching = settings
            self.worker.load_requested.emit(settings)
        elif previous != settings:
            self.worker.retune_requested.emit(settings)
        if _changed(previous, settings, HOTKEY_KEYS):
            self._stop_hotkeys()
            self._start_hotkeys()
        self.menu.hud_action.setChecked(settings.hud_enabled)
        if _changed(previous, settings, (Key.START_AT_LOGIN,)):
            from voxtray.desktop.autostart import launch_command, set_start_at_login

            try:
                set_start_at_login(settings.start_at_login, launch_command())
            except VoxtrayError as exc:
                self.tray.notify("Voxtray could not change start at login", first_line(exc))

    @Slot(object, str)
    def _on_load_failed(self, asked: Settings, message: str) -> None:
        self._install_over()
        if self._switching is not asked:
            self.tray.notify("Voxtray", plain(message))
            return
        self._switching = None
        running = self.worker.dictation.in_use()
        if running is None:  # nothing ran before: the error state says what is wrong
            self.tray.notify("Voxtray could not load the model", plain(message))
            return
        kept = {key.value: running.get(key) for key in RELOAD_KEYS}
        self.settings = asked.replace(**kept)
        self.tray.notify(
            f"Voxtray could not switch to {asked.model}",
            f"{plain(message)} Still using {running.model}; nothing else changed.",
        )

    @Slot()
    def open_selftest(self) -> None:
        from voxtray.ui.selftest_dialog import SelfTestDialog

        if bring_up(self._selftest):
            return
        model = self.store.get(self.settings.model)
        if model is None:
            self.tray.notify("Voxtray", f"{self.settings.model} is not installed yet")
            return
        dialog = SelfTestDialog(model, self.settings.provider, self.settings.gpu_index)
        dialog.show()
        self._selftest = dialog

    @Slot()
    def open_models(self) -> None:
        from voxtray.inference.engines import EngineChoice
        from voxtray.ui.model_manager import ModelManager

        if not bring_up(self._models):
            choice = EngineChoice.of(self.settings)
            self._models = ModelManager(
                self.store,
                choice,
                active=self.settings.model,
                budget_ms=self.settings.recommend_budget_ms,
            )
            self._models.budget_changed.connect(self._save_budget)
            self._models.show()

    @Slot(int)
    def _save_budget(self, budget_ms: int) -> None:
        self._remember(recommend_budget_ms=budget_ms)

    @Slot()
    def open_setup(self) -> None:
        from voxtray.ui.first_run import setup_window

        if not bring_up(self._setup):
            self._setup = setup_window(
                self.settings,
                self.store,
                self.worker,
                self._setup_done,
                self.open_models,
                self.open_selftest,
            )
            self._setup.show()

    def _setup_done(self, chosen: Settings) -> None:
        if self._quitting:  # quit with the window open: it shows again next time
            return
        # Only what the window sets: its copy of the rest may be older than a change made
        # in the settings window meanwhile.
        done = {"hotkey": chosen.hotkey, "first_run_done": True}
        on_disk, _ = self.settings_store.load()
        self.save_settings(on_disk.replace(**done))
        self.apply_settings(self.settings.replace(**done))

    @Slot()
    def open_history(self) -> None:
        self.histories.open()

    @property
    def history_window(self) -> HistoryWindow | None:
        return self.histories.window

    # --- shutdown -------------------------------------------------------------------------

    def _stop_hotkeys(self) -> None:
        if self.hotkeys is not None:
            self.hotkeys.stop()
            self.hotkeys = None

    @Slot()
    def quit(self) -> None:
        """Finish the dictation in progress (stop, transcribe, store, type), then exit."""
        if self._quitting:
            return
        self._quitting = True
        self._stop_hotkeys()
        self.worker.dictation.finish(timeout=QUIT_FINISH_S)
        self.control.stop()
        self.worker_thread.quit()
        self.worker_thread.wait(10_000)
        self.worker.dictation.close()
        self.hud.close()
        self.tray.hide()
        app = QApplication.instance()
        if app is not None:
            app.quit()

    def dispose(self) -> None:
        """Delete the windows and Qt objects this app made, once its event loop is over:
        they refer to one another, and a garbage collection deleting them crashes Qt."""
        windows = [self._dialog, self._selftest, self._models, self._setup, self._download]
        others: list[QObject | None] = [self.tray.window, self.tray.icon, self.menu.menu]
        others += [self.menu, self.histories, self.hud]
        if not self.worker_thread.isRunning():  # Qt aborts on deleting a running thread
            others += [self.worker, self.worker_thread]
        # The reports first: what they still have queued for the GUI thread goes with them.
        close_and_delete([*windows, self.histories.window], [self.reports, *others, self])
        self._dialog = self._selftest = self._models = self._setup = self._download = None


def _preview(text: str) -> str:
    return (text if len(text) <= 80 else text[:77] + "…") or "(empty)"


def _changed(previous: Settings, current: Settings, keys: tuple[Key, ...]) -> bool:
    return any(previous.get(key) != current.get(key) for key in keys)
