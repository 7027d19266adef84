"""The local control socket: how `voxtray toggle|start|stop|status|show|quit` reach the
running instance, and how a second `voxtray` finds the first.

One JSON object per line each way. The socket lives in a folder only the user can open
(0700, owned by the user, not a link) under VOXTRAY_HOME or XDG_RUNTIME_DIR, or
/tmp/voxtray-<uid> without either; both sides refuse a folder another user could have
made. On Linux each side also checks the other's uid (SO_PEERCRED).

The server reads every connection through one selector, each with a single deadline for
the whole request, so idle or dribbling clients cost nothing and never delay others.
The client side (`send`, the socket's place, the folder check) is `voxtray.control.client`,
re-exported here.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voxtray.choices import DictationState
from voxtray.control.client import (
    MAX_MESSAGE,
    NoAnswerError,
    NotRunningError,
    RefusedError,
    UnsafeSocketError,
    check_private_dir,
    lock_file,
    peer_uid,
    send,
    socket_file,
)
from voxtray.errors import ExitCode

__all__ = [
    "COMMANDS",
    "ControlServer",
    "NoAnswerError",
    "NotRunningError",
    "RefusedError",
    "StartupHandler",
    "UnsafeSocketError",
    "check_private_dir",
    "send",
    "socket_path",
]

COMMANDS = ("toggle", "start", "stop", "status", "show", "history", "quit")
Handler = Callable[[dict[str, Any]], dict[str, Any]]
_REQUEST_DEADLINE_S = 2.0  # for a whole request, however it trickles in
_MAX_CONNECTIONS = 64
_BACKLOG = 128
_STARTING: dict[str, Any] = {
    "ok": True,
    "state": DictationState.LOADING.value,
    "detail": "starting",
}


class StartupHandler:
    """Answers the socket while the app is still starting, until `hand_over`.

    The socket is claimed first (it is the single-instance lock), so commands can come
    before anything could act on them. `status` and `stop` are answered as loading,
    `start`/`toggle` are refused (exit code 8, as while the model loads), and `quit`, `show`
    and `history` are kept for the handler that takes over: a `quit` said during start-up is done,
    never answered and forgotten.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deferred: list[str] = []
        self._next: Handler | None = None

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._next is not None:  # taken over while this request was on its way
                return self._next(request)
            command = request["cmd"]
            if command in ("start", "toggle"):
                return {**_STARTING, "ok": False, "error": "cannot start dictation yet: starting",
                        "exit_code": int(ExitCode.NOT_RUNNING)}  # fmt: skip
            if command in ("quit", "show", "history") and command not in self._deferred:
                self._deferred.append(command)
            return dict(_STARTING)

    def hand_over(self, handler: Handler) -> list[str]:
        """From now on `handler` answers; returns the deferred commands, to be acted on."""
        with self._lock:
            self._next = handler
            deferred, self._deferred = self._deferred, []
        return deferred


def socket_path() -> Path:
    """Where the running instance listens."""
    return Path(socket_file())


class _Connection:
    __slots__ = ("deadline", "received", "reply", "sock")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.received = b""
        self.reply: bytes | None = None


class ControlServer:
    """Serves commands on the control socket from a background thread.

    Args:
        handler: Called with each request, one at a time, on the server thread; returns
            the reply. It should be quick: it runs between other clients' reads.
    """

    def __init__(self, handler: Handler, path: Path | None = None) -> None:
        self.handler = handler
        self.path = path or socket_path()
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._lock_fd: int | None = None
        self._stopping = threading.Event()

    def start(self) -> bool:
        """Bind the socket. False when another live instance already owns it.

        Raises:
            UnsafeSocketError: The socket folder is not the user's private folder.
        """
        check_private_dir(self.path.parent, create=True)
        # The live instance holds this lock for its whole life and the kernel drops it when
        # the process dies, so whoever gets it may treat any socket file as a crash's.
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        lock_fd = os.open(lock_file(self.path), flags, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            return False
        self._lock_fd = lock_fd
        # Clients retry while this pid lives, so a start-up or a full queue is no "not running".
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, f"{os.getpid()}\n".encode(), 0)
        self.path.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.path))
        os.chmod(self.path, 0o600)
        server.listen(_BACKLOG)
        server.setblocking(False)
        self._socket = server
        self._thread = threading.Thread(target=self._serve, name="voxtray-control", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._socket is not None:
            self._socket.close()
            self.path.unlink(missing_ok=True)
        if self._lock_fd is not None:
            os.ftruncate(self._lock_fd, 0)
            os.close(self._lock_fd)
        self._socket = None
        self._thread = None
        self._lock_fd = None

    def _serve(self) -> None:
        assert self._socket is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._socket, selectors.EVENT_READ)
            open_: dict[socket.socket, _Connection] = {}
            while not self._stopping.is_set():
                now = time.monotonic()
                wait = min([0.2, *(c.deadline - now for c in open_.values())])
                for key, _events in selector.select(max(wait, 0.0)):
                    if key.fileobj is self._socket:
                        self._accept(selector, open_)
                    else:
                        self._step(selector, open_, key.data)
                now = time.monotonic()
                for conn in [c for c in open_.values() if c.deadline <= now]:
                    _drop(selector, open_, conn)
            for conn in list(open_.values()):
                _drop(selector, open_, conn)

    def _accept(self, selector: selectors.BaseSelector, open_: dict[Any, _Connection]) -> None:
        assert self._socket is not None
        while True:
            try:
                sock, _ = self._socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if peer_uid(sock) not in (None, os.getuid()):
                sock.close()
                continue
            if len(open_) >= _MAX_CONNECTIONS:
                _drop(selector, open_, min(open_.values(), key=lambda c: c.deadline))
            sock.setblocking(False)
            conn = _Connection(sock, time.monotonic() + _REQUEST_DEADLINE_S)
            open_[sock] = conn
            selector.register(sock, selectors.EVENT_READ, conn)

    def _step(
        self,
        selector: selectors.BaseSelector,
        open_: dict[Any, _Connection],
        conn: _Connection,
    ) -> None:
        # A broken client or a failing handler costs its own connection, never the server.
        try:
            if conn.reply is None:
                chunk = conn.sock.recv(4096)
                conn.received += chunk
                if len(conn.received) > MAX_MESSAGE:
                    raise OSError("request too long")
                if chunk and b"\n" not in conn.received:
                    return
                conn.reply = self._reply(conn.received)
                selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
            conn.reply = conn.reply[conn.sock.send(conn.reply) :]
            if conn.reply:
                return
        except (BlockingIOError, InterruptedError):
            return
        except Exception:  # noqa: S110
            pass
        _drop(selector, open_, conn)

    def _reply(self, received: bytes) -> bytes:
        try:
            request = json.loads(received.split(b"\n", 1)[0].strip() or b"{}")
        except ValueError:
            request = None
        if not isinstance(request, dict) or request.get("cmd") not in COMMANDS:
            reply: dict[str, Any] = {
                "ok": False,
                "error": f"unknown command; use one of {COMMANDS}",
            }
        else:
            try:
                reply = self.handler(request)
            except Exception as exc:  # a failing handler is an answer, not a hang-up
                reply = {"ok": False, "error": f"{exc.__class__.__name__}: {exc}"}
        return json.dumps(reply, ensure_ascii=False).encode() + b"\n"


def _drop(
    selector: selectors.BaseSelector, open_: dict[Any, _Connection], conn: _Connection
) -> None:
    open_.pop(conn.sock, None)
    with contextlib.suppress(KeyError, ValueError, OSError):
        selector.unregister(conn.sock)
    conn.sock.close()
