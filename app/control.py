"""The local control socket: how `voxtray toggle|start|stop|status|show|quit` reach the
running instance, and how a second `voxtray` finds the first.

One JSON object per line each way. The socket lives in a folder only the user can open
(0700, owned by the user, not a link) under VOXTRAY_HOME or XDG_RUNTIME_DIR, or
/tmp/voxtray-<uid> without either; both sides refuse a folder another user could have
made. On Linux each side also checks the other's uid (SO_PEERCRED).

The server reads every connection through one selector, each with a single deadline for
the whole request, so idle or dribbling clients cost nothing and never delay others.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import socket
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.errors import ExitCode, VoxtrayError
from app.paths import HOME_ENV

COMMANDS = ("toggle", "start", "stop", "status", "show", "quit")
Handler = Callable[[dict[str, Any]], dict[str, Any]]
_MAX_REQUEST = 64 * 1024
_REQUEST_DEADLINE_S = 2.0  # for a whole request, however it trickles in
_MAX_CONNECTIONS = 64
_BACKLOG = 128
_RETRY_PAUSE_S = 0.02


class NotRunningError(VoxtrayError):
    exit_code = ExitCode.NOT_RUNNING


class NoAnswerError(NotRunningError):
    """An instance holds the lock but did not answer in time."""


class RefusedError(VoxtrayError):
    """The running instance could not do what was asked; its reply says why."""


class UnsafeSocketError(VoxtrayError):
    """The socket folder or its server belongs to someone else."""

    exit_code = ExitCode.USAGE


def socket_path() -> Path:
    """Where the running instance listens."""
    if os.environ.get(HOME_ENV):
        base = Path(os.environ[HOME_ENV]).expanduser() / "run"
    elif os.environ.get("XDG_RUNTIME_DIR"):
        base = Path(os.environ["XDG_RUNTIME_DIR"]) / "voxtray"
    else:
        import tempfile  # here: this module is on `voxtray stop`'s start-up path

        base = Path(tempfile.gettempdir()) / f"voxtray-{os.getuid()}"
    return base / "control.sock"


def check_private_dir(path: Path, *, create: bool) -> bool:
    """Make sure `path` is a folder of ours, not a link; with `create`, make it (0700) when
    missing and close it to others when it is open.

    Returns:
        False when it does not exist and `create` is False.

    Raises:
        UnsafeSocketError: It is a link, not a folder, or another user's.
    """
    if create:
        with contextlib.suppress(FileExistsError):
            path.mkdir(parents=True, mode=0o700)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    problem = None
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symbolic link"
    elif not stat.S_ISDIR(info.st_mode):
        problem = "is not a folder"
    elif info.st_uid != os.getuid():
        problem = f"belongs to uid {info.st_uid}, not to you (uid {os.getuid()})"
    if problem:
        raise UnsafeSocketError(
            f"control socket folder {path} {problem}; another user may be listening there. "
            "Set XDG_RUNTIME_DIR to a private folder (e.g. /run/user/$(id -u)), or remove it"
        )
    if create and info.st_mode & 0o077:
        # Ours but open (another umask or tool): whatever others left in it is replaced at
        # start, the lock is opened without following links, and clients check our uid.
        os.chmod(path, 0o700)
    return True


def send(command: str, timeout: float = 2.0, path: Path | None = None) -> dict[str, Any]:
    """Send one command to the running instance and return its answer.

    `timeout` bounds the whole exchange, retries included: while the instance is alive but
    its socket is momentarily full or not yet listening, connecting is tried again.

    Raises:
        NotRunningError: No instance is listening (NoAnswerError: one is, but is silent).
        UnsafeSocketError: The socket folder or the server is not the user's own.
        RefusedError: The instance answered that it could not do it (a reply with
            `"ok": false` and an `exit_code`), e.g. `start` while the microphone is lost.
    """
    reply = _send(command, timeout, path)
    if reply.get("ok") is False and isinstance(reply.get("exit_code"), int):
        error = RefusedError(str(reply.get("error") or "refused"))
        with contextlib.suppress(ValueError):
            error.exit_code = ExitCode(reply["exit_code"])
        raise error
    return reply


def _send(command: str, timeout: float, path: Path | None) -> dict[str, Any]:
    target = path or socket_path()
    if not check_private_dir(target.parent, create=False):
        raise NotRunningError("Voxtray is not running (start it with: voxtray)")
    deadline = time.monotonic() + timeout
    while True:
        try:
            return _exchange(target, command, deadline)
        except (FileNotFoundError, ConnectionRefusedError, BlockingIOError) as exc:
            pid = _live_pid(target)
            if pid is None:
                raise NotRunningError("Voxtray is not running (start it with: voxtray)") from None
            if time.monotonic() + _RETRY_PAUSE_S >= deadline:
                raise NoAnswerError(
                    f"Voxtray (pid {pid}) did not take the connection within {timeout:g} s: "
                    f"{exc.strerror or exc}"
                ) from None
            time.sleep(_RETRY_PAUSE_S)
        except TimeoutError:
            raise NoAnswerError(
                f"the running Voxtray did not answer within {timeout:g} s ({target})"
            ) from None
        except OSError as exc:
            raise NotRunningError(f"cannot reach the running Voxtray at {target}: {exc}") from None


def _exchange(target: Path, command: str, deadline: float) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(max(deadline - time.monotonic(), 0.001))
        client.connect(str(target))
        uid = _peer_uid(client)
        if uid is not None and uid != os.getuid():
            raise UnsafeSocketError(
                f"{target} is served by uid {uid}, not by you; refusing to use it. "
                "Set XDG_RUNTIME_DIR to a private folder"
            )
        client.sendall(json.dumps({"cmd": command}).encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n") and len(answer) <= _MAX_REQUEST:
            client.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = client.recv(4096)
            if not chunk:
                break
            answer += chunk
    try:
        reply = json.loads(answer)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        raise NoAnswerError(f"the running Voxtray gave no valid answer ({target})")
    return reply


def _lock_path(path: Path) -> Path:
    return path.with_suffix(".lock")


def _live_pid(path: Path) -> int | None:
    """The pid the live instance wrote into the lock file, if that process exists."""
    try:
        pid = int(_lock_path(path).read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid


def _peer_uid(conn: socket.socket) -> int | None:
    if not sys.platform.startswith("linux"):
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


class _Connection:
    # A plain class: dataclasses costs `voxtray stop` ~10 ms of imports.
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
        lock_fd = os.open(_lock_path(self.path), flags, 0o600)
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
            if _peer_uid(sock) not in (None, os.getuid()):
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
                if len(conn.received) > _MAX_REQUEST:
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
