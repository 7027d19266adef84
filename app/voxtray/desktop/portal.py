"""The xdg-desktop-portal on the session bus: requests, sessions and signals, over jeepney.

A portal call that needs the user (a consent dialog) answers at once with a request object
and later sends that object's ``Response`` signal: 0 granted, 1 cancelled by the user, 2
ended another way. `PortalLink.request` subscribes to the signal before it calls, so an
answer that comes quickly is never missed. Sessions end by themselves when the desktop
revokes them (``org.freedesktop.portal.Session.Closed``); `PortalLink.watch` hands such
signals to a callback on the link's receiving thread.

The link is shared by threads (jeepney's threaded router), so the dictation, the hotkey
listener and `voxtray doctor` can each hold one without a thread of their own to read it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue as queue_module
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxtray.errors import ExitCode, VoxtrayError

if TYPE_CHECKING:
    from jeepney import Message
    from jeepney.io.threading import DBusRouter

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
REMOTE_DESKTOP = "org.freedesktop.portal.RemoteDesktop"
GLOBAL_SHORTCUTS = "org.freedesktop.portal.GlobalShortcuts"
SESSION = "org.freedesktop.portal.Session"
REQUEST = "org.freedesktop.portal.Request"

CALL_TIMEOUT_S = 5.0
"""A method call's own answer (not the user's): the portal answers in milliseconds."""


class PortalError(VoxtrayError):
    """The portal cannot be used or refused; the message says why, in one line."""

    exit_code = ExitCode.NO_DESKTOP


@dataclass(frozen=True)
class Answer:
    """A request's ``Response``: its code (0 granted, 1 cancelled, 2 other) and results."""

    code: int
    results: dict[str, object]

    @property
    def granted(self) -> bool:
        return self.code == 0


def bus_address(env: Mapping[str, str]) -> str | None:
    """The session bus address the environment names, or None."""
    return env.get("DBUS_SESSION_BUS_ADDRESS") or None


def plain(value: object) -> object:
    """A D-Bus variant ``(signature, value)`` as its value, dictionaries recursively."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return plain(value[1])
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    return value


class PortalLink:
    """One connection to the session bus, for portal calls from any thread.

    Args:
        address: The session bus address.
        timeout: How long connecting and authenticating may take.

    Raises:
        PortalError: The bus cannot be reached.
    """

    def __init__(self, address: str, timeout: float = CALL_TIMEOUT_S) -> None:
        from jeepney.io.threading import DBusRouter, open_dbus_connection

        try:
            connection = open_dbus_connection(bus=address, auth_timeout=timeout)
        except (OSError, ValueError, RuntimeError, TimeoutError) as exc:
            reason = exc or type(exc).__name__
            raise PortalError(f"cannot reach the session bus ({reason})") from exc
        self.router: DBusRouter = DBusRouter(connection)
        self.sender = (connection.unique_name or "").lstrip(":").replace(".", "_")
        self._tokens = itertools.count(1)
        self._prefix = f"voxtray{os.getpid()}_{secrets.token_hex(3)}"
        self._watchers: list[threading.Thread] = []
        self._closing = threading.Event()

    def token(self) -> str:
        """A handle token no other request or session of this process uses."""
        return f"{self._prefix}_{next(self._tokens)}"

    def call(
        self,
        interface: str,
        method: str,
        signature: str,
        body: tuple[object, ...],
        path: str = PORTAL_PATH,
        timeout: float = CALL_TIMEOUT_S,
        bus_name: str = PORTAL_NAME,
    ) -> tuple[object, ...]:
        """A method call to the portal (or to the peer `bus_name`); its reply's body.

        Raises:
            PortalError: An error reply (its name and message), or no answer in time.
        """
        from jeepney import DBusAddress, MessageType, new_method_call

        address = DBusAddress(path, bus_name=bus_name, interface=interface)
        message = new_method_call(address, method, signature, body)
        try:
            reply = self.router.send_and_get_reply(message, timeout=timeout)
        except TimeoutError as exc:
            raise PortalError(f"the portal did not answer {method} within {timeout:g} s") from exc
        except (OSError, ValueError) as exc:
            raise PortalError(f"{method} failed: {exc or type(exc).__name__}") from exc
        if reply.header.message_type is MessageType.error:
            raise PortalError(f"{method} refused: {_error_text(reply)}")
        return tuple(reply.body)

    def property(self, interface: str, name: str) -> object:
        """A property of the portal object, as a plain value.

        Raises:
            PortalError: No portal on the bus, or it lacks the interface or the property.
        """
        body = self.call("org.freedesktop.DBus.Properties", "Get", "ss", (interface, name))
        return plain(body[0]) if body else None

    def request(
        self, interface: str, method: str, signature: str, body: tuple[object, ...], timeout: float
    ) -> Answer:
        """A call that answers through a request object: wait up to ``timeout`` for its
        ``Response``.

        ``body``'s last item is the options dictionary; ``handle_token`` is added to it.

        Raises:
            PortalError: The call failed, or no ``Response`` came in time.
        """
        token = self.token()
        path = f"{PORTAL_PATH}/request/{self.sender}/{token}"
        *leading, options = body
        assert isinstance(options, dict)
        options = {**options, "handle_token": ("s", token)}
        with self._signals(REQUEST, "Response", path) as responses:
            self.call(interface, method, signature, (*leading, options))
            try:
                message = responses.get(timeout=timeout)
            except queue_module.Empty as exc:
                self._close_request(path)
                raise PortalError(f"no answer to {method} within {timeout:g} s") from exc
        code, results = message.body
        values = plain(results)
        return Answer(int(code), values if isinstance(values, dict) else {})

    def _close_request(self, path: str) -> None:
        with contextlib.suppress(PortalError):
            self.call(REQUEST, "Close", "", (), path=path, timeout=1.0)

    @contextlib.contextmanager
    def _signals(self, interface: str, member: str, path: str | None = None) -> Iterator[_Queue]:
        from jeepney import MatchRule
        from jeepney.bus_messages import message_bus

        rule = MatchRule(type="signal", interface=interface, member=member, path=path)
        self.router.send_and_get_reply(message_bus.AddMatch(rule), timeout=CALL_TIMEOUT_S)
        try:
            with self.router.filter(rule, bufsize=64) as queue:
                yield queue
        finally:
            with contextlib.suppress(Exception):
                self.router.send(message_bus.RemoveMatch(rule))

    def watch(
        self,
        interface: str,
        member: str,
        handler: Callable[[Message], None],
        path: str | None = None,
    ) -> None:
        """Call ``handler`` with each such signal, on a thread of the link's, until `close`."""
        ready = threading.Event()

        def follow() -> None:
            with self._signals(interface, member, path) as queue:
                ready.set()
                while not self._closing.is_set():
                    try:
                        message = queue.get(timeout=0.2)
                    except queue_module.Empty:  # look at _closing again
                        message = None
                    if message is not None:
                        handler(message)

        thread = threading.Thread(target=follow, name=f"voxtray-portal-{member}", daemon=True)
        thread.start()
        ready.wait(CALL_TIMEOUT_S)
        self._watchers.append(thread)

    def close_session(self, session: str) -> None:
        with contextlib.suppress(PortalError):
            self.call(SESSION, "Close", "", (), path=session, timeout=1.0)

    def close(self) -> None:
        self._closing.set()
        for thread in self._watchers:
            thread.join(1.0)
        with contextlib.suppress(Exception):
            self.router.close()
        with contextlib.suppress(Exception):
            self.router.conn.close()  # the router leaves its connection open


class _Queue:
    """What jeepney's router filter yields (typed for mypy)."""

    def get(self, timeout: float | None = None) -> Message: ...


def _error_text(reply: Message) -> str:
    from jeepney.low_level import HeaderFields

    name = str(reply.header.fields.get(HeaderFields.error_name, "error"))
    detail = reply.body[0] if reply.body and isinstance(reply.body[0], str) else ""
    return f"{name}: {detail}" if detail else name


def interface_version(link: PortalLink, interface: str) -> int | None:
    """The portal's version of ``interface``, or None when the portal lacks it."""
    try:
        version = link.property(interface, "version")
    except PortalError:
        return None
    return int(version) if isinstance(version, int) else None


def connect(env: Mapping[str, str]) -> PortalLink | str:
    """A link to the session bus the portal is on, or why there is none (one line)."""
    address = bus_address(env)
    if address is None:
        return "no session bus (DBUS_SESSION_BUS_ADDRESS is not set)"
    try:
        return PortalLink(address, timeout=1.0)
    except PortalError as exc:
        return str(exc)
