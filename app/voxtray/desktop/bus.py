"""A D-Bus connection with a deadline on every step, Hello included, on jeepney's parts.

jeepney's own blocking connection waits for the bus's answer to Hello forever: a bus that
authenticates and then says nothing keeps the caller, its thread and its socket for good.
Here the socket is authenticated, said hello to and asked questions under deadlines; a
connection that fails closes its socket at once, and a bus found dead is not asked again
for `DEAD_BUS_RETRY_S` (every dictation would otherwise wait for it again).
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from itertools import count
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jeepney import Message

DEAD_BUS_RETRY_S = 60.0
"""How long a bus that did not answer is left alone before it is tried again."""

_HELLO_PATH = "/org/freedesktop/DBus"
_HELLO_NAME = "org.freedesktop.DBus"


class BusError(Exception):
    """The bus cannot be used; the message says why, in one line."""


class Deadline:
    """A point in time a whole exchange must be over by."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        return self.ends - time.monotonic()

    def limit(self, most: float) -> float:
        """The time one step may take: ``most``, or what is left if that is less.

        Raises:
            TimeoutError: Nothing is left.
        """
        left = self.left()
        if left <= 0:
            raise TimeoutError(f"over the {1000 * self.seconds:.0f} ms allowed")
        return min(most, left)


class _DeadBuses:
    """Buses that did not answer lately, with why, for the whole process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until: dict[str, tuple[float, str]] = {}

    def why(self, address: str) -> str | None:
        with self._lock:
            until, reason = self._until.get(address, (0.0, ""))
        return reason if time.monotonic() < until else None

    def remember(self, address: str, reason: str, seconds: float = DEAD_BUS_RETRY_S) -> None:
        with self._lock:
            self._until[address] = (time.monotonic() + seconds, reason)

    def forget(self, address: str) -> None:
        with self._lock:
            self._until.pop(address, None)


DEAD_BUSES = _DeadBuses()


class BusLink:
    """An authenticated, registered connection to one bus. Not for several threads at once."""

    def __init__(self, sock: socket.socket, address: str) -> None:
        from jeepney.low_level import Parser

        self.address = address
        self._sock = sock
        self._parser = Parser()
        self._serials = count(start=1)
        self._selector = selectors.DefaultSelector()
        self._selector.register(sock, selectors.EVENT_READ)
        self.unique_name = ""

    def call(self, message: Message, timeout: float) -> Message:
        """Send ``message`` and return its reply; other messages that arrive are dropped.

        Raises:
            TimeoutError: No reply within ``timeout`` seconds (a later one is dropped too).
            OSError: The bus closed or sent what cannot be read as D-Bus.
        """
        from jeepney.low_level import HeaderFields

        ends = time.monotonic() + timeout
        serial = next(self._serials)
        try:
            data = message.serialise(serial=serial)
        except Exception as exc:  # a name or path from another program that D-Bus refuses
            raise ValueError(f"cannot be asked ({type(exc).__name__}: {exc})") from exc
        self._sock.settimeout(timeout)  # a bus that reads nothing must not hold the send
        self._sock.sendall(data)
        while True:
            incoming = self._next_message(ends)
            if incoming.header.fields.get(HeaderFields.reply_serial) == serial:
                return incoming

    def _next_message(self, ends: float) -> Message:
        while True:
            try:
                message = self._parser.get_next_message()
            except Exception as exc:  # what a hostile bus sends is not our bug
                raise OSError(f"unreadable message ({type(exc).__name__}: {exc})") from exc
            if message is not None:
                return message
            left = ends - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                raise TimeoutError("no answer in time")
            received = self._sock.recv(65536)
            if not received:
                raise ConnectionResetError("the bus closed the connection")
            self._parser.add_data(received)

    def hello(self, timeout: float) -> None:
        from jeepney import DBusAddress, new_method_call

        bus = DBusAddress(_HELLO_PATH, bus_name=_HELLO_NAME, interface=_HELLO_NAME)
        reply = self.call(new_method_call(bus, "Hello"), timeout)
        name = reply.body[0] if len(reply.body) == 1 else None
        if not isinstance(name, str):
            raise OSError("the bus answered Hello with no name")
        self.unique_name = name

    def close(self) -> None:
        self._selector.close()
        self._sock.close()


def connect(address: str, timeout: float) -> BusLink:
    """Connect to the bus at ``address``, authenticate and say hello within ``timeout``.

    Raises:
        BusError: It failed, or the bus failed within the last `DEAD_BUS_RETRY_S` (then it
            is not tried again).
    """
    dead = DEAD_BUSES.why(address)
    if dead is not None:
        raise BusError(dead)
    try:
        link = _connect(address, timeout)
    except (OSError, TimeoutError, ValueError, RuntimeError, StopIteration) as exc:
        if isinstance(exc, TimeoutError):
            reason = f"{address} did not answer within {timeout:g} s"
        else:
            reason = f"cannot connect to {address} ({exc or type(exc).__name__})"
        DEAD_BUSES.remember(address, reason)
        raise BusError(reason) from exc
    DEAD_BUSES.forget(address)
    return link


def _connect(address: str, timeout: float) -> BusLink:
    from jeepney.bus import get_bus
    from jeepney.io.blocking import prep_socket

    ends = time.monotonic() + timeout
    sock = prep_socket(get_bus(address), timeout=timeout)
    link = BusLink(sock, address)
    try:
        link.hello(max(ends - time.monotonic(), 0.001))
    except BaseException:
        link.close()
        raise
    return link
