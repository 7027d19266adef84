"""Work off the GUI thread, and its answers back on it: `run_in_background(call, done)` runs
`call` on a thread of its own and hands `done` its result, or the exception that stopped
it, on the GUI thread; `on_gui_thread(fn)` makes a callback (progress, say) that any
thread may call and that runs `fn` there.

Qt runs a lambda, or a method of an object that is not a QObject, in the thread that
emits, and a widget touched from another thread can crash the app. So every answer goes
through one relay, a QObject of the GUI thread whose slot Qt queues there. A callback
that is a method of a window deleted meanwhile is not called.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot

from voxtray.errors import VoxtrayError

T = TypeVar("T")
P = ParamSpec("P")

log = logging.getLogger(__name__)

EXPECTED = (VoxtrayError, OSError, RuntimeError, ValueError)
"""What a call may fail with in use; anything else is also logged with its traceback."""


class _Relay(QObject):
    """Runs what it is handed in the thread it lives in (the GUI thread)."""

    handed = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.handed.connect(self._run)

    @Slot(object)
    def _run(self, call: Callable[[], None]) -> None:
        call()


_relay: _Relay | None = None


def _gui_relay() -> _Relay:
    global _relay
    if _relay is None or not shiboken6.isValid(_relay):
        app = QCoreApplication.instance()
        if app is None:
            raise RuntimeError("the GUI's background work needs a running QApplication")
        _relay = _Relay()
        _relay.moveToThread(app.thread())
        _relay.setParent(app)  # deleted with the application, never by a collection
    return _relay


def _alive(fn: Callable[..., object]) -> bool:
    """False when `fn` is a method of a Qt object that has been deleted."""
    owner = getattr(fn, "__self__", None)
    return not isinstance(owner, QObject) or shiboken6.isValid(owner)


def on_gui_thread(fn: Callable[P, None]) -> Callable[P, None]:
    """`fn`, callable from any thread, run on the GUI thread (at once when called there)."""
    relay = _gui_relay()

    def handed(*args: P.args, **kwargs: P.kwargs) -> None:
        def run() -> None:
            if _alive(fn):
                fn(*args, **kwargs)

        with contextlib.suppress(RuntimeError):  # the application is gone: nobody to tell
            relay.handed.emit(run)

    return handed


class Job:
    """Work running on a thread of its own (see `run_in_background`)."""

    def __init__(self, work: Callable[[], None], name: str) -> None:
        self._thread = threading.Thread(target=work, name=name, daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout_s: float) -> bool:
        """Wait for the work to end; False when it still runs after `timeout_s`."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


def run_in_background(
    call: Callable[[], T],
    done: Callable[[T | Exception], None],
    name: str = "voxtray-background",
) -> Job:
    """Run `call` on a new thread; `done` gets its result, or the exception it raised, on
    the GUI thread. Call it on the GUI thread."""
    answer = on_gui_thread(done)

    def work() -> None:
        try:
            result: T | Exception = call()
        except Exception as exc:  # handed on: no window waits for an answer that never comes
            if not isinstance(exc, EXPECTED):
                log.exception("%s failed", name)
            result = exc
        answer(result)

    return Job(work, name)
