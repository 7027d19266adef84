"""The clipboard and the primary selection as the compositor itself reports them, through
the wlr-data-control protocol (sway and other wlroots compositors, KWin, Hyprland).

Two things wl-clipboard cannot do everywhere:

- Say that a selection is empty. KWin 5.27 tells a new data-control client nothing when
  the clipboard is empty (wlroots sends "no selection"), so ``wl-paste`` waits for ever and
  an empty clipboard looked like an owner that does not answer. Here one round trip after
  asking settles it: whatever the compositor had to say has arrived by then.
- Own the primary selection on KWin 5.27: it offers data-control version 2, which carries
  the primary selection, but sends nothing about an empty one, so ``wl-copy --primary``
  concludes it is unsupported. `PrimaryOffer` sets it through the same protocol and
  serves the text itself while a paste needs it.

GNOME's mutter has no data-control: `selections` returns None there and the tools are used.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from voxtray.desktop.wayland_wire import (
    Connection,
    Reader,
    WireError,
    socket_path,
    string,
    uint,
)

log = logging.getLogger(__name__)

MANAGER = "zwlr_data_control_manager_v1"
PRIMARY_SINCE = 2
"""The manager version whose devices carry the primary selection."""

_MANAGER_CREATE_SOURCE, _MANAGER_GET_DEVICE = 0, 1
_DEVICE_SET_SELECTION, _DEVICE_SET_PRIMARY = 0, 2
_DEVICE_DATA_OFFER, _DEVICE_SELECTION, _DEVICE_FINISHED, _DEVICE_PRIMARY = 0, 1, 2, 3
_OFFER_OFFER = 0
_SOURCE_OFFER = 0
_SOURCE_SEND, _SOURCE_CANCELLED = 0, 1
SERVE_WRITE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Selections:
    """What the compositor holds: each selection's types, or None when it is empty.

    ``primary`` means nothing unless ``tells_primary`` (data-control version 2).
    """

    clipboard: tuple[str, ...] | None
    primary: tuple[str, ...] | None
    tells_primary: bool

    def empty(self, primary: bool = False) -> bool | None:
        """Whether that selection is empty; None when the compositor does not say."""
        if primary and not self.tells_primary:
            return None
        return (self.primary if primary else self.clipboard) is None


class _Device:
    """A data-control device on a fresh connection, and the offers it has been told of."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.version = min(PRIMARY_SINCE, connection.globals[MANAGER].version)
        seat = connection.bind("wl_seat", 1)
        self.manager = connection.bind(MANAGER, self.version)
        self._offers: dict[int, list[str]] = {}
        self.clipboard: int = 0
        self.primary: int = 0
        self.device = connection.new_object(self._event)
        connection.request(self.manager, _MANAGER_GET_DEVICE, uint(self.device) + uint(seat))
        connection.roundtrip()

    def _event(self, opcode: int, reader: Reader) -> None:
        if opcode == _DEVICE_DATA_OFFER:
            offer = reader.uint()
            types: list[str] = []
            self._offers[offer] = types
            self.connection.listen(offer, lambda op, r: _offered(op, r, types))
        elif opcode == _DEVICE_SELECTION:
            self.clipboard = reader.uint()
        elif opcode == _DEVICE_PRIMARY:
            self.primary = reader.uint()

    def types(self, offer: int) -> tuple[str, ...] | None:
        return tuple(self._offers.get(offer, ())) if offer else None


def _offered(opcode: int, reader: Reader, types: list[str]) -> None:
    if opcode == _OFFER_OFFER:
        types.append(reader.string())


_WITHOUT: set[str] = set()
"""Compositors (by socket path) seen without data-control: not connected to again."""


def _open(env: Mapping[str, str], timeout: float) -> _Device | None:
    path = socket_path(env)
    if path is None or path in _WITHOUT:
        return None
    try:
        connection = Connection(env, timeout)
    except WireError:
        return None
    if MANAGER not in connection.globals or "wl_seat" not in connection.globals:
        connection.close()
        _WITHOUT.add(path)
        return None
    try:
        return _Device(connection)
    except WireError as exc:
        log.debug("data-control: %s", exc)
        connection.close()
        return None


def selections(env: Mapping[str, str], timeout: float = 1.0) -> Selections | None:
    """The selections' types now; None where the compositor has no data-control (GNOME)
    or cannot be reached, and the tools must be asked instead."""
    device = _open(env, timeout)
    if device is None:
        return None
    try:
        return Selections(
            device.types(device.clipboard),
            device.types(device.primary),
            device.version >= PRIMARY_SINCE,
        )
    finally:
        device.connection.close()


def primary_settable(env: Mapping[str, str], timeout: float = 1.0) -> bool:
    """Whether `PrimaryOffer` can own the primary selection on this compositor."""
    device = _open(env, timeout)
    if device is None:
        return False
    device.connection.close()
    return device.version >= PRIMARY_SINCE


class PrimaryOffer:
    """The primary selection owned with a text, served from a thread of its own until
    `stop`, which empties it again unless another program took it meanwhile.

    Args:
        env: The session's environment.
        types: The types the text is offered as.
    """

    def __init__(self, env: Mapping[str, str], types: Sequence[str]) -> None:
        self._env = dict(env)
        self._types = tuple(types)
        self._device: _Device | None = None
        self._source = 0
        self._data = b""
        self._cancelled = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.served = 0
        """How many times a program asked for the text."""

    def start(self, text: str) -> bool:
        """Own the primary selection with ``text``; False when this compositor cannot."""
        device = _open(self._env, 1.0)
        if device is None or device.version < PRIMARY_SINCE:
            if device is not None:
                device.connection.close()
            return False
        self._device, self._data = device, text.encode("utf-8")
        connection = device.connection
        self._source = connection.new_object(self._source_event)
        connection.request(device.manager, _MANAGER_CREATE_SOURCE, uint(self._source))
        for mime in self._types:
            connection.request(self._source, _SOURCE_OFFER, string(mime))
        connection.request(device.device, _DEVICE_SET_PRIMARY, uint(self._source))
        try:
            connection.roundtrip()
        except WireError as exc:
            log.warning("cannot own the primary selection: %s", exc)
            self._close()
            return False
        self._thread = threading.Thread(target=self._serve, name="voxtray-primary", daemon=True)
        self._thread.start()
        return True

    def _source_event(self, opcode: int, reader: Reader) -> None:
        if opcode == _SOURCE_SEND:
            reader.string()
            _write_all(reader.fd(), self._data)
            self.served += 1
        elif opcode == _SOURCE_CANCELLED:
            self._cancelled.set()

    def _serve(self) -> None:
        device = self._device
        assert device is not None
        while not self._stopping.is_set():
            try:
                device.connection.dispatch(0.05)
            except WireError as exc:
                log.warning("serving the primary selection stopped: %s", exc)
                return

    def stop(self) -> None:
        """Stop serving; the primary selection is emptied unless another program owns it."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(SERVE_WRITE_TIMEOUT_S + 1.0)
            self._thread = None
        device = self._device
        if device is not None and not self._cancelled.is_set():
            with contextlib.suppress(WireError):
                device.connection.request(device.device, _DEVICE_SET_PRIMARY, uint(0))
                device.connection.roundtrip()
        self._close()

    def _close(self) -> None:
        if self._device is not None:
            self._device.connection.close()
            self._device = None


def _write_all(fd: int, data: bytes) -> None:
    """Write the text to a reader's pipe and close it; a reader that stops reading does not
    hold the thread past `SERVE_WRITE_TIMEOUT_S`."""
    import select

    try:
        os.set_blocking(fd, False)
        view = memoryview(data)
        while view:
            _, writable, _ = select.select([], [fd], [], SERVE_WRITE_TIMEOUT_S)
            if not writable:
                return
            view = view[os.write(fd, view) :]
    except OSError as exc:  # the reader went away
        log.debug("primary selection reader: %s", exc)
    finally:
        os.close(fd)
