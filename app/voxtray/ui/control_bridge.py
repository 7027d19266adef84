"""The control socket and the global hotkey, bridged to the running app.

`voxtray start/stop/toggle/status` and the hotkey go to the worker: a start at once (it is
quick and thread-safe), a stop queued to the worker's thread (it waits for the tail,
recognises and types), status answered from the dictation. `show`, `history` and `quit`
become this object's signals, which the app receives on `@Slot` methods, so Qt runs them
on the GUI thread. Requests arrive on the socket's thread and key presses on the hotkey
backend's: nothing else happens there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

from voxtray.config import Settings
from voxtray.control.server import ControlServer, StartupHandler
from voxtray.errors import VoxtrayError
from voxtray.hotkeys.base import hotkey_fields

if TYPE_CHECKING:
    from voxtray.hotkeys import HotkeyListener
    from voxtray.ui.worker import InferenceWorker

Notify = Callable[[str, str], None]
"""A notice for the user: title, message."""


class ControlBridge(QObject):
    """Serves the control socket and listens for the hotkey for one running app."""

    show_requested = Signal()
    history_requested = Signal()
    quit_requested = Signal()

    def __init__(self, worker: InferenceWorker, notify: Notify) -> None:
        super().__init__()
        self.worker = worker
        self.notify = notify
        self.hotkeys: HotkeyListener | None = None
        self.control: ControlServer | None = None

    # --- the control socket ---------------------------------------------------------------

    def serve(self, control: ControlServer | None) -> bool:
        """Answer the control socket: `control`, claimed while the app started, or a new
        one; False when another running instance holds the socket."""
        if control is None:
            self.control = ControlServer(self.handle)
            return self.control.start()
        self.control = control
        if not isinstance(control.handler, StartupHandler):
            control.handler = self.handle
            return True
        signals = {"quit": self.quit_requested, "history": self.history_requested}
        for command in control.handler.hand_over(self.handle):
            # Once the event loop runs: a quit before then would be lost.
            QTimer.singleShot(0, signals.get(command, self.show_requested).emit)
        return True

    def handle(self, request: Mapping[str, object]) -> dict[str, object]:
        """Runs on the control thread: only thread-safe calls and queued signals here."""
        command = request["cmd"]
        worker = self.worker
        if command in ("start", "toggle"):
            if command == "start" or not worker.listening:
                refused = None if worker.start() else worker.refusal()
                if refused is not None:
                    message, code = refused
                    return {**self._status(), "ok": False, "error": message,
                            "exit_code": int(code)}  # fmt: skip
            else:
                worker.stop_requested.emit()
        elif command == "stop":
            worker.stop_requested.emit()
        elif command == "show":
            self.show_requested.emit()
        elif command == "history":
            self.history_requested.emit()
        elif command == "quit":
            self.quit_requested.emit()
        return self._status()

    def _status(self) -> dict[str, object]:
        """The worker's status, with the hotkey's backend and binding."""
        return {**self.worker.status(), "hotkey": hotkey_fields(self.hotkeys)}

    # --- the hotkey ----------------------------------------------------------------------

    def start_hotkeys(self, settings: Settings) -> None:
        """Listen for the hotkey `settings` name; what goes wrong is a notice."""
        from voxtray.hotkeys import (
            PushToTalk,
            check_conflicts,
            choose_backend,
            parse_hotkey,
            x11_grab_conflict,
        )

        try:
            backend = choose_backend(settings.hotkey_backend)
            hotkey = parse_hotkey(settings.hotkey)
            talk = PushToTalk(
                self._hotkey_down, self.worker.stop_requested.emit, mode=settings.hotkey_mode
            )
            backend.start(hotkey, talk.pressed, talk.released)
        except (VoxtrayError, ValueError) as exc:
            self.notify("Voxtray hotkey", f"{exc}; bind `voxtray toggle` to a key instead")
            return
        self.hotkeys = backend
        # Another program holding the same combination would react to it too.
        conflict = x11_grab_conflict(hotkey) if backend.name == "pynput" else None
        conflict = conflict or check_conflicts(hotkey)
        if conflict:
            self.notify("Voxtray hotkey", conflict)

    def _hotkey_down(self) -> None:
        self.worker.start()

    def stop_hotkeys(self) -> None:
        if self.hotkeys is not None:
            self.hotkeys.stop()
            self.hotkeys = None

    def restart_hotkeys(self, settings: Settings) -> None:
        self.stop_hotkeys()
        self.start_hotkeys(settings)

    def stop_serving(self) -> None:
        if self.control is not None:
            self.control.stop()
