"""`voxtray` with no command: start the tray app, or bring the running one forward; quit on
Ctrl+C, SIGTERM and SIGHUP the way `voxtray quit` does."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading

from PySide6.QtCore import QObject, QSocketNotifier, QTimer
from PySide6.QtWidgets import QApplication

from voxtray.config import SettingsStore
from voxtray.control.server import ControlServer, NotRunningError, StartupHandler, send
from voxtray.desktop.bus_guard import keep_off_dead_buses
from voxtray.history.store import History
from voxtray.memory import return_large_blocks
from voxtray.models.store import ModelStore
from voxtray.ui.app import VoxtrayApp
from voxtray.ui.platform import prepare_platform

QUIT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_app(force_window: bool = False) -> int:
    """Start the tray app, or bring the running one forward."""
    from voxtray.models.catalog import load_catalog
    from voxtray.paths import models_dir

    prepare_platform()  # no desktop session: a one-line error before anything is opened
    return_large_blocks()
    # Claim the single-instance lock before opening anything shared (history, settings):
    # a second instance started at the same moment must leave without touching them.
    control = ControlServer(StartupHandler())
    if not control.start():
        with contextlib.suppress(NotRunningError):
            send("show", timeout=2.0)
        print("voxtray: already running; brought it forward", file=sys.stderr)
        return 0
    # Qt waits forever on a bus that never answers: it must not be shown one.
    if (dead_bus := keep_off_dead_buses(os.environ)) is not None:
        print(f"voxtray: {dead_bus}", file=sys.stderr, flush=True)
    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(qapp, QApplication)
    qapp.setApplicationName("Voxtray")
    qapp.setQuitOnLastWindowClosed(False)
    # Said before the worker thread starts: while it loads the model, descriptor 2 is
    # captured for onnxruntime's fallback log, and a line printed then would vanish into it.
    print(
        f"voxtray: running (pid {os.getpid()}); control with `voxtray toggle|status`",
        file=sys.stderr,
        flush=True,
    )
    store = ModelStore(models_dir(), load_catalog())
    voxtray = VoxtrayApp(
        store, SettingsStore(), History(), force_window=force_window, control=control
    )
    threading.current_thread().name = "voxtray-gui"
    wakeup = _quit_on_signals(voxtray)
    status = int(qapp.exec())
    if voxtray.worker_thread.isRunning():
        # Quit does not wait for a model still downloading or converting (the store keeps
        # the download for a resume, and only renames a finished model into place); Qt
        # aborts the process when a running thread's object is destroyed, so leave now.
        print("voxtray: quit while the model was still loading", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(status)
    voxtray.dispose()
    del voxtray, wakeup  # kept alive until the event loop ends
    return status


def _quit_on_signals(voxtray: VoxtrayApp) -> tuple[socket.socket, socket.socket, QObject]:
    """Ctrl+C, SIGTERM and SIGHUP quit the way `voxtray quit` does: the dictation in
    progress is finished first, and no traceback is printed.

    Python runs a signal handler only between bytecodes of the main thread, which sits in
    Qt's event loop; the wakeup fd makes a socket notifier fire there, so the handler runs
    at once instead of at the next timer that happens to run Python code.
    """
    reader, writer = socket.socketpair()
    for end in (reader, writer):
        end.setblocking(False)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, voxtray)

    def drain() -> None:
        with contextlib.suppress(OSError):
            while reader.recv(64):
                pass

    notifier.activated.connect(drain)

    def handler(signum: int, frame: object) -> None:
        QTimer.singleShot(0, voxtray.quit)

    for number in QUIT_SIGNALS:
        signal.signal(number, handler)
    return reader, writer, notifier
