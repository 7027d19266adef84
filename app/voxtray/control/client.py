"""The client side of the control socket (`voxtray.control.server` has the protocol and the server):
where the socket is, whether its folder is safe, and one request to the running app.

A key binding runs `voxtray stop` on every release and the text waits for it, so this
module keeps to a few stdlib imports (no pathlib, typing or threading: ~20 ms of the
command's start-up).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys
import time

from voxtray import HOME_ENV
from voxtray.errors import ExitCode, VoxtrayError

TYPE_CHECKING = False  # typing itself is ~4 ms of imports
if TYPE_CHECKING:
    from typing import Any

MAX_MESSAGE = 64 * 1024
_RETRY_PAUSE_S = 0.02
NOT_RUNNING = "Voxtray is not running (start it with: voxtray)"


class NotRunningError(VoxtrayError):
    exit_code = ExitCode.NOT_RUNNING


class NoAnswerError(NotRunningError):
    """An instance holds the lock but did not answer in time."""


class RefusedError(VoxtrayError):
    """The running instance could not do what was asked; its reply says why."""


class UnsafeSocketError(VoxtrayError):
    """The socket folder or its server belongs to someone else."""

    exit_code = ExitCode.USAGE


def socket_file() -> str:
    """Where the running instance listens."""
    if os.environ.get(HOME_ENV):
        base = os.path.join(os.path.expanduser(os.environ[HOME_ENV]), "run")
    elif os.environ.get("XDG_RUNTIME_DIR"):
        base = os.path.join(os.environ["XDG_RUNTIME_DIR"], "voxtray")
    else:
        import tempfile

        base = os.path.join(tempfile.gettempdir(), f"voxtray-{os.getuid()}")
    return os.path.join(base, "control.sock")


def lock_file(socket_path: str | os.PathLike[str]) -> str:
    """The single-instance lock beside the socket; it holds the live instance's pid."""
    return os.path.splitext(os.fspath(socket_path))[0] + ".lock"


def check_private_dir(path: str | os.PathLike[str], *, create: bool) -> bool:
    """Make sure `path` is a folder of ours, not a link; with `create`, make it (0700) when
    missing and close it to others when it is open.

    Returns:
        False when it does not exist (or a file stands where a parent should) and `create`
        is False.

    Raises:
        UnsafeSocketError: It is a link, not a folder, or another user's.
    """
    if create:
        try:  # noqa: SIM105 (contextlib stays off this module's imports)
            os.makedirs(path, mode=0o700)
        except FileExistsError:
            pass
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
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
            f"control socket folder {os.fspath(path)} {problem}; another user may be listening"
            " there. Set XDG_RUNTIME_DIR to a private folder (e.g. /run/user/$(id -u)), or"
            " remove it"
        )
    if create and info.st_mode & 0o077:
        # Ours but open (another umask or tool): whatever others left in it is replaced at
        # start, the lock is opened without following links, and clients check our uid.
        os.chmod(path, 0o700)
    return True


def send(
    command: str, timeout: float = 2.0, path: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Send one command to the running instance and return its answer.

    `timeout` bounds the whole exchange, retries included: while the instance is alive but
    its socket is momentarily full or not yet listening, connecting is tried again.

    Raises:
        NotRunningError: No instance is listening (NoAnswerError: one is, but is silent).
        UnsafeSocketError: The socket folder or the server is not the user's own.
        RefusedError: The instance answered that it could not do it (a reply with
            `"ok": false` and an `exit_code`), e.g. `start` while the microphone is lost.
    """
    reply = _send(command, timeout, os.fspath(path) if path is not None else socket_file())
    code = reply.get("exit_code")
    if reply.get("ok") is False and isinstance(code, int):
        error = RefusedError(str(reply.get("error") or "refused"))
        try:  # noqa: SIM105 (contextlib stays off this module's imports)
            error.exit_code = ExitCode(code)
        except ValueError:  # a code this version does not know: the class's own stands
            pass
        raise error
    return reply


def _send(command: str, timeout: float, target: str) -> dict[str, Any]:
    if not check_private_dir(os.path.dirname(target), create=False):
        raise NotRunningError(NOT_RUNNING)
    deadline = time.monotonic() + timeout
    while True:
        try:
            return _exchange(target, command, deadline)
        except (FileNotFoundError, ConnectionRefusedError, BlockingIOError) as exc:
            pid = live_pid(target)
            if pid is None:
                raise NotRunningError(NOT_RUNNING) from None
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


def _exchange(target: str, command: str, deadline: float) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(max(deadline - time.monotonic(), 0.001))
        client.connect(target)
        uid = peer_uid(client)
        if uid is not None and uid != os.getuid():
            raise UnsafeSocketError(
                f"{target} is served by uid {uid}, not by you; refusing to use it. "
                "Set XDG_RUNTIME_DIR to a private folder"
            )
        client.sendall(json.dumps({"cmd": command}).encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n") and len(answer) <= MAX_MESSAGE:
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


def live_pid(socket_path: str | os.PathLike[str]) -> int | None:
    """The pid the live instance wrote into the lock file, if that process exists."""
    try:
        with open(lock_file(socket_path), encoding="ascii") as stream:
            pid = int(stream.read().strip() or 0)
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


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (Linux; None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])
