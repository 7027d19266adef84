"""The local control socket: how `voxtray toggle|start|stop|status|show|quit` reach the
running instance, and how a second `voxtray` finds the first.

One JSON object per line each way. The socket lives in a folder only the user can open
(0700) under VOXTRAY_HOME or XDG_RUNTIME_DIR, never at a fixed path, so a test instance
never meets the user's own; on Linux the server also checks the caller's uid.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.errors import ExitCode, VoxtrayError
from app.paths import HOME_ENV

COMMANDS = ("toggle", "start", "stop", "status", "show", "quit")
Handler = Callable[[dict[str, Any]], dict[str, Any]]
_MAX_REQUEST = 64 * 1024


class NotRunningError(VoxtrayError):
    exit_code = ExitCode.NOT_RUNNING


def socket_path() -> Path:
    """Where the running instance listens."""
    if os.environ.get(HOME_ENV):
        base = Path(os.environ[HOME_ENV]).expanduser() / "run"
    elif os.environ.get("XDG_RUNTIME_DIR"):
        base = Path(os.environ["XDG_RUNTIME_DIR"]) / "voxtray"
    else:
        base = Path(tempfile.gettempdir()) / f"voxtray-{os.getuid()}"
    return base / "control.sock"


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


def send(command: str, timeout: float = 2.0, path: Path | None = None) -> dict[str, Any]:
    """Send one command to the running instance and return its answer.

    Raises:
        NotRunningError: No instance is listening.
    """
    target = path or socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(str(target))
            client.sendall(json.dumps({"cmd": command}).encode() + b"\n")
            answer = _read_line(client)
    except (FileNotFoundError, ConnectionRefusedError):
        raise NotRunningError("Voxtray is not running (start it with: voxtray)") from None
    except OSError as exc:
        raise NotRunningError(f"cannot reach the running Voxtray at {target}: {exc}") from None
    reply: dict[str, Any] = json.loads(answer)
    return reply


def _read_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
        if len(data) > _MAX_REQUEST:
            raise OSError("message too long")
    return data.strip()


def _peer_uid(conn: socket.socket) -> int | None:
    if not sys.platform.startswith("linux"):
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


class ControlServer:
    """Serves commands on the control socket from a background thread.

    Args:
        handler: Called with each request on the server thread; returns the reply.
    """

    def __init__(self, handler: Handler, path: Path | None = None) -> None:
        self.handler = handler
        self.path = path or socket_path()
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._lock_fd: int | None = None
        self._stopping = threading.Event()

    def start(self) -> bool:
        """Bind the socket. False when another live instance already owns it."""
        _private_dir(self.path.parent)
        # The live instance holds this lock for its whole life and the kernel drops it when
        # the process dies, so whoever gets it may treat any socket file as a crash's.
        lock_fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            return False
        self._lock_fd = lock_fd
        self.path.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.path))
        os.chmod(self.path, 0o600)
        server.listen(8)
        server.settimeout(0.2)
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
            os.close(self._lock_fd)
        self._socket = None
        self._thread = None
        self._lock_fd = None

    def _serve(self) -> None:
        assert self._socket is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(2.0)
        # Garbage, deeply nested JSON or a failing handler must cost one connection, never
        # the server thread.
        with contextlib.suppress(Exception):
            uid = _peer_uid(conn)
            if uid is not None and uid != os.getuid():
                return
            request = json.loads(_read_line(conn) or b"{}")
            if not isinstance(request, dict) or request.get("cmd") not in COMMANDS:
                reply: dict[str, Any] = {
                    "ok": False,
                    "error": f"unknown command; use one of {COMMANDS}",
                }
            else:
                reply = self.handler(request)
            conn.sendall(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
