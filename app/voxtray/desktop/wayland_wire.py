"""A small Wayland client speaking the wire protocol itself: a socket, numbered objects,
requests out, events in (with file descriptors), and round trips.

Enough for questions the command-line tools cannot answer without hanging (see
`voxtray.desktop.data_control`), with no library and no window. A message is a header
(object id; size << 16 | opcode) and 32-bit words: unsigned integers, object ids, and
strings as a length (with the closing NUL) followed by the bytes padded to 4. File
descriptors travel beside the bytes (SCM_RIGHTS), in the order their messages come.
"""

from __future__ import annotations

import array
import collections
import os
import select
import socket
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

DISPLAY_ID = 1
_HEADER = struct.Struct("<II")
_MAX_FDS = 28
_DISPLAY_SYNC, _DISPLAY_GET_REGISTRY = 0, 1
_REGISTRY_BIND = 0
_DISPLAY_ERROR, _DISPLAY_DELETE_ID = 0, 1
_REGISTRY_GLOBAL = 0

Handler = Callable[[int, "Reader"], None]
"""Called with an event's opcode and a reader over its arguments."""


class WireError(Exception):
    """The compositor cannot be reached, refused a request, or went away."""


def socket_path(env: Mapping[str, str]) -> str | None:
    """Where the session's compositor listens, or None when the environment names none."""
    display = env.get("WAYLAND_DISPLAY") or ""
    if not display:
        return None
    if display.startswith("/"):
        return display
    runtime = env.get("XDG_RUNTIME_DIR") or ""
    return os.path.join(runtime, display) if runtime else None


def uint(value: int) -> bytes:
    return struct.pack("<I", value)


def string(text: str) -> bytes:
    data = text.encode("utf-8") + b"\0"
    return uint(len(data)) + data + b"\0" * (-len(data) % 4)


class Reader:
    """An event's arguments, read in order."""

    def __init__(self, payload: bytes, fds: collections.deque[int]) -> None:
        self._payload = payload
        self._at = 0
        self._fds = fds

    def uint(self) -> int:
        (value,) = struct.unpack_from("<I", self._payload, self._at)
        self._at += 4
        return int(value)

    def string(self) -> str:
        length = self.uint()
        data = self._payload[self._at : self._at + length]
        self._at += length + (-length % 4)
        return data.rstrip(b"\0").decode("utf-8", "replace")

    def fd(self) -> int:
        if not self._fds:
            raise WireError("an event announced a file descriptor that did not come")
        return self._fds.popleft()


@dataclass(frozen=True)
class Global:
    """An interface the compositor offers: its registry name and version."""

    name: int
    version: int


class Connection:
    """One client connection, used from one thread at a time.

    Args:
        env: The session's environment (WAYLAND_DISPLAY, XDG_RUNTIME_DIR).
        timeout: How long connecting and each round trip may take.

    Raises:
        WireError: No compositor to connect to.
    """

    def __init__(self, env: Mapping[str, str], timeout: float = 1.0) -> None:
        path = socket_path(env)
        if path is None:
            raise WireError("no Wayland display (WAYLAND_DISPLAY is not set)")
        self.timeout = timeout
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.settimeout(timeout)
        try:
            self._socket.connect(path)
        except OSError as exc:
            self._socket.close()
            raise WireError(f"cannot reach the compositor at {path}: {exc}") from exc
        self._next_id = DISPLAY_ID + 1
        self._handlers: dict[int, Handler] = {DISPLAY_ID: self._display_event}
        self._buffer = b""
        self._fds: collections.deque[int] = collections.deque()
        self.globals: dict[str, Global] = {}
        registry = self.new_object(self._registry_event)
        self._registry = registry
        try:
            self.request(DISPLAY_ID, _DISPLAY_GET_REGISTRY, uint(registry))
            self.roundtrip()
        except WireError:
            self.close()
            raise

    def new_object(self, handler: Handler | None = None) -> int:
        """A new object id, its events going to ``handler`` (ignored without one)."""
        object_id = self._next_id
        self._next_id += 1
        self.listen(object_id, handler or (lambda _opcode, _reader: None))
        return object_id

    def listen(self, object_id: int, handler: Handler) -> None:
        """Hand the events of ``object_id`` (one the compositor made) to ``handler``."""
        self._handlers[object_id] = handler

    def bind(self, interface: str, version: int, handler: Handler | None = None) -> int:
        """Bind a global at ``version`` or the compositor's, whichever is lower.

        Raises:
            WireError: The compositor does not offer ``interface``.
        """
        offered = self.globals.get(interface)
        if offered is None:
            raise WireError(f"the compositor does not offer {interface}")
        object_id = self.new_object(handler)
        bound = min(version, offered.version)
        body = uint(offered.name) + string(interface) + uint(bound) + uint(object_id)
        self.request(self._registry, _REGISTRY_BIND, body)
        return object_id

    def request(
        self, object_id: int, opcode: int, body: bytes = b"", fds: tuple[int, ...] = ()
    ) -> None:
        """Send one request, with ``fds`` beside it."""
        header = _HEADER.pack(object_id, (_HEADER.size + len(body)) << 16 | opcode)
        ancillary = []
        if fds:
            ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
        try:
            self._socket.sendmsg([header + body], ancillary)
        except OSError as exc:
            raise WireError(f"the compositor went away: {exc}") from exc

    def roundtrip(self) -> None:
        """Wait until the compositor has handled every request sent so far, dispatching
        the events it sent meanwhile.

        Raises:
            WireError: No answer within the timeout, or the compositor reported an error.
        """
        done: list[bool] = []
        callback = self.new_object(lambda _opcode, _reader: done.append(True))
        self.request(DISPLAY_ID, _DISPLAY_SYNC, uint(callback))
        deadline = time.monotonic() + self.timeout
        while not done:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireError(f"the compositor did not answer within {self.timeout:g} s")
            self.dispatch(left)

    def dispatch(self, timeout: float) -> bool:
        """Read what has come within ``timeout`` and hand each event to its object;
        False when nothing came."""
        ready, _, _ = select.select([self._socket], [], [], max(timeout, 0.0))
        if not ready:
            return False
        try:
            data, ancillary, _flags, _address = self._socket.recvmsg(
                65536, socket.CMSG_SPACE(_MAX_FDS * 4)
            )
        except OSError as exc:
            raise WireError(f"the compositor went away: {exc}") from exc
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
                self._fds.extend(fds)
        if not data:
            raise WireError("the compositor closed the connection")
        self._buffer += data
        self._handle_buffered()
        return True

    def _handle_buffered(self) -> None:
        while len(self._buffer) >= _HEADER.size:
            object_id, word = _HEADER.unpack_from(self._buffer)
            size, opcode = word >> 16, word & 0xFFFF
            if size < _HEADER.size:
                raise WireError("the compositor sent a message shorter than its header")
            if len(self._buffer) < size:
                return
            payload = self._buffer[_HEADER.size : size]
            self._buffer = self._buffer[size:]
            handler = self._handlers.get(object_id)
            if handler is not None:
                handler(opcode, Reader(payload, self._fds))

    def _display_event(self, opcode: int, reader: Reader) -> None:
        if opcode == _DISPLAY_ERROR:
            object_id, _code, message = reader.uint(), reader.uint(), reader.string()
            raise WireError(f"the compositor refused a request to object {object_id}: {message}")
        if opcode == _DISPLAY_DELETE_ID:
            self._handlers.pop(reader.uint(), None)

    def _registry_event(self, opcode: int, reader: Reader) -> None:
        if opcode == _REGISTRY_GLOBAL:
            name, interface, version = reader.uint(), reader.string(), reader.uint()
            self.globals[interface] = Global(name, version)

    def fileno(self) -> int:
        return self._socket.fileno()

    def close(self) -> None:
        """Disconnect: the compositor destroys every object of this client."""
        self._socket.close()
        while self._fds:
            os.close(self._fds.popleft())
