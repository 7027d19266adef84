"""The desktop's accessibility bus (AT-SPI), spoken to over D-Bus with jeepney.

What screen readers ask, Voxtray asks too: is there an accessibility bus; which widget has
the focus, in which application; does it take text; what text does it hold; and, for the
`atspi` output, insert text at its caret through ``EditableText`` with no keyboard at all.

The bus address comes from ``org.a11y.Bus.GetAddress`` on the session bus. The focused
widget is found by walking down from the registry's applications through what is showing,
active windows first, to the one whose state says FOCUSED. Every call has a deadline, so an
application that hangs costs at most that; `Unavailable` says, in one line, why nothing can
be known (no session bus, no accessibility bus, nothing exposed).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 0.5
"""The longest one question to one application may take."""
MAX_NODES = 4000
"""The most widgets one search for the focus visits (a huge table stops it, not a hang)."""

_REGISTRY = "org.a11y.atspi.Registry"
_ROOT = "/org/a11y/atspi/accessible/root"
_ACCESSIBLE = "org.a11y.atspi.Accessible"
_TEXT = "org.a11y.atspi.Text"
_EDITABLE = "org.a11y.atspi.EditableText"
_APPLICATION = "org.a11y.atspi.Application"
_NULL_PATH = "/org/a11y/atspi/null"


_SAID: set[str] = set()  # what `note_once` told already, for the life of the process


class State(enum.IntEnum):
    """The AT-SPI states Voxtray reads (bit numbers of ``GetState``'s two words)."""

    ACTIVE = 1
    DEFUNCT = 6
    EDITABLE = 7
    ENABLED = 8
    FOCUSED = 12
    MULTI_LINE = 17
    SENSITIVE = 24
    SHOWING = 25
    SINGLE_LINE = 26
    VISIBLE = 30
    READ_ONLY = 43


def states(words: Sequence[int]) -> frozenset[State]:
    """The known states set in ``GetState``'s answer (bit n of the 64 across two words)."""
    bits = 0
    for index, word in enumerate(words[:2]):
        bits |= (int(word) & 0xFFFFFFFF) << (32 * index)
    return frozenset(state for state in State if bits >> state & 1)


class _Connection(Protocol):
    """What Voxtray uses of a jeepney blocking connection."""

    def send_and_get_reply(self, message: object, *, timeout: float | None = None) -> object: ...

    def close(self) -> None: ...


class Unavailable(Exception):
    """Nothing can be learnt over the accessibility bus; the message says why, in one line."""


@dataclass(frozen=True)
class Ref:
    """One accessible object: the application's bus name and the object's path."""

    bus_name: str
    path: str


@dataclass(frozen=True)
class Widget:
    """The focused widget as the accessibility bus describes it.

    Attributes:
        ref: Where to ask about it again.
        app: The application's name (its root object's Name).
        role: Its role name ("text", "push button", ...).
        name: Its accessible name; often empty for text fields.
        states: What it is (FOCUSED, EDITABLE, READ_ONLY, ...).
        interfaces: The AT-SPI interfaces it implements.
    """

    ref: Ref
    app: str
    role: str
    name: str
    states: frozenset[State]
    interfaces: frozenset[str]

    @property
    def has_text(self) -> bool:
        """Whether its text can be read back."""
        return _TEXT in self.interfaces

    @property
    def editable(self) -> bool:
        """Whether it takes typed text: an editable, writable text widget."""
        return (
            State.EDITABLE in self.states and State.READ_ONLY not in self.states and self.has_text
        )

    @property
    def insertable(self) -> bool:
        """Whether text can be inserted through ``EditableText`` without keys."""
        return self.editable and _EDITABLE in self.interfaces

    def describe(self) -> str:
        label = f' "{self.name}"' if self.name else ""
        return f"{self.role or 'widget'}{label} in {self.app or 'an application'}"


def bus_address(env: Mapping[str, str] | None = None, timeout: float = CALL_TIMEOUT_S) -> str:
    """The accessibility bus's address, from ``AT_SPI_BUS_ADDRESS`` or the session bus.

    Raises:
        Unavailable: No session bus, or nothing on it answers for the accessibility bus.
    """
    env = os.environ if env is None else env
    direct = env.get("AT_SPI_BUS_ADDRESS")
    if direct:
        return direct
    session = env.get("DBUS_SESSION_BUS_ADDRESS")
    if not session:
        raise Unavailable("no accessibility: no session bus (DBUS_SESSION_BUS_ADDRESS is unset)")
    from jeepney import DBusAddress, new_method_call

    message = new_method_call(
        DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus"),
        "GetAddress",
    )
    try:
        with _connect(session) as connection:
            reply = connection.send_and_get_reply(message, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise Unavailable(f"no accessibility: the session bus does not answer ({exc})") from exc
    address = _body(reply, "no accessibility bus on the session bus (at-spi2-core not running)")
    if not isinstance(address, str) or not address:
        raise Unavailable("no accessibility: the session bus gave no accessibility bus address")
    return address


@contextlib.contextmanager
def _connect(address: str) -> Iterator[_Connection]:
    connection = _open_connection(address, CALL_TIMEOUT_S)
    try:
        yield connection
    finally:
        connection.close()


def _open_connection(address: str, timeout: float) -> _Connection:
    """Connect and say Hello within ``timeout`` (jeepney waits for Hello's reply forever)."""
    from jeepney.io.blocking import open_dbus_connection

    opened: list[_Connection] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            opened.append(open_dbus_connection(bus=address, auth_timeout=timeout))
        except Exception as exc:  # handed to the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=run, name="voxtray-dbus-connect", daemon=True)
    worker.start()
    worker.join(timeout * 2)
    if failed:
        raise OSError(str(failed[0]) or type(failed[0]).__name__) from failed[0]
    if not opened:
        raise TimeoutError(f"no answer from {address} within {timeout * 2:g} s")
    return opened[0]


def _body(reply: object, error: str) -> object:
    from jeepney import MessageType

    header = getattr(reply, "header", None)
    body = tuple(getattr(reply, "body", ()))
    if header is None or header.message_type is MessageType.error:
        detail = body[0] if body and isinstance(body[0], str) else ""
        raise Unavailable(f"{error}{': ' + detail if detail else ''}")
    return body[0] if len(body) == 1 else tuple(body)


class Accessibility:
    """A connection to the accessibility bus, opened on first use, safe across threads.

    Args:
        env: The environment that names the session bus; ``os.environ`` if None.
        timeout: The deadline of each call, in seconds.
    """

    def __init__(self, env: Mapping[str, str] | None = None, timeout: float = CALL_TIMEOUT_S):
        self._env = dict(os.environ if env is None else env)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._connection: _Connection | None = None

    def connect(self) -> None:
        """Open the connection now (later calls reuse it).

        Raises:
            Unavailable: There is no accessibility bus.
        """
        with self._lock:
            self._open()

    def _open(self) -> _Connection:
        if self._connection is None:
            address = bus_address(self._env, self._timeout)
            try:
                self._connection = _open_connection(address, self._timeout)
            except (OSError, TimeoutError, ValueError) as exc:
                raise Unavailable(f"no accessibility: cannot connect to its bus ({exc})") from exc
        return self._connection

    def available(self) -> str | None:
        """None when the bus answers, else why not (one line)."""
        try:
            self.connect()
        except Unavailable as exc:
            return str(exc)
        return None

    def note_once(self, reason: str) -> None:
        """Log ``reason`` the first time only (a line per missing bus, not per dictation)."""
        if reason not in _SAID:
            _SAID.add(reason)
            log.warning("%s; delivery is not checked", reason)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # --- calls ------------------------------------------------------------------------

    def call(
        self,
        ref: Ref,
        interface: str,
        method: str,
        signature: str | None = None,
        args: tuple[object, ...] = (),
    ) -> object:
        """One method call on ``ref``; its single value, or a tuple of several.

        Raises:
            Unavailable: The bus or the application did not answer in time, or refused.
        """
        from jeepney import DBusAddress, new_method_call

        address = DBusAddress(ref.path, bus_name=ref.bus_name, interface=interface)
        message = new_method_call(address, method, signature, args)
        with self._lock:
            connection = self._open()
            try:
                reply = connection.send_and_get_reply(message, timeout=self._timeout)
            except TimeoutError as exc:
                raise Unavailable(f"{ref.bus_name} did not answer {method}") from exc
            except OSError as exc:
                self._connection = None
                raise Unavailable(f"the accessibility bus closed ({exc})") from exc
        return _body(reply, f"{ref.bus_name} refused {method}")

    def prop(self, ref: Ref, interface: str, name: str) -> object:
        value = self.call(ref, "org.freedesktop.DBus.Properties", "Get", "ss", (interface, name))
        return value[1] if isinstance(value, tuple) and len(value) == 2 else value

    def applications(self) -> list[Ref]:
        """The applications registered on the bus."""
        return self.children(Ref(_REGISTRY, _ROOT))

    def children(self, ref: Ref) -> list[Ref]:
        found = self.call(ref, _ACCESSIBLE, "GetChildren")
        return [Ref(str(name), str(path)) for name, path in _pairs(found) if path != _NULL_PATH]

    def states(self, ref: Ref) -> frozenset[State]:
        words = self.call(ref, _ACCESSIBLE, "GetState")
        return states([int(str(word)) for word in _sequence(words)])

    def widget(self, ref: Ref, app: str = "", state: frozenset[State] | None = None) -> Widget:
        """What ``ref`` is: its role, name, states and interfaces."""
        names = _sequence(self.call(ref, _ACCESSIBLE, "GetInterfaces"))
        interfaces = frozenset(str(name) for name in names)
        return Widget(
            ref,
            app,
            str(self.call(ref, _ACCESSIBLE, "GetRoleName")),
            str(self.prop(ref, _ACCESSIBLE, "Name")),
            self.states(ref) if state is None else state,
            interfaces,
        )

    def focused(self) -> Widget | None:
        """The widget with the keyboard focus, or None when no exposed application has one.

        Active windows are searched first; what is not showing is not entered.

        Raises:
            Unavailable: There is no accessibility bus.
        """
        budget = [MAX_NODES]
        apps = self.applications()
        later: list[tuple[Ref, str]] = []
        for app in apps:
            try:
                name = str(self.prop(app, _ACCESSIBLE, "Name"))
                windows = self.children(app)
            except Unavailable as exc:
                log.debug("skipping an application: %s", exc)
                continue
            for window in windows:
                try:
                    state = self.states(window)
                except Unavailable:
                    continue
                if State.ACTIVE in state:
                    found = self._search(window, state, name, budget)
                    if found is not None:
                        return found
                elif State.SHOWING in state:
                    later.append((window, name))
        for window, name in later:
            with contextlib.suppress(Unavailable):
                found = self._search(window, self.states(window), name, budget)
                if found is not None:
                    return found
        return None

    def _search(
        self, ref: Ref, state: frozenset[State], app: str, budget: list[int]
    ) -> Widget | None:
        stack = [(ref, state)]
        while stack and budget[0] > 0:
            node, node_state = stack.pop()
            budget[0] -= 1
            if State.FOCUSED in node_state:
                return self.widget(node, app, node_state)
            try:
                kids = self.children(node)
            except Unavailable:
                continue
            for child in reversed(kids):
                try:
                    child_state = self.states(child)
                except Unavailable:
                    continue
                if State.SHOWING in child_state or State.FOCUSED in child_state:
                    stack.append((child, child_state))
        return None

    # --- text ---------------------------------------------------------------------------

    def text(self, ref: Ref) -> str:
        """All the text ``ref`` holds."""
        return str(self.call(ref, _TEXT, "GetText", "ii", (0, -1)))

    def caret(self, ref: Ref) -> int:
        return int(str(self.prop(ref, _TEXT, "CaretOffset")))

    def toolkit(self, ref: Ref) -> str:
        """The toolkit of the application that owns ``ref`` ("Qt", "GAIL", ...)."""
        return str(self.prop(Ref(ref.bus_name, _ROOT), _APPLICATION, "ToolkitName"))

    def insert(self, ref: Ref, text: str) -> bool:
        """Insert ``text`` at the caret and leave the caret after it; whether it took it.

        The application's own insertion is used, so its undo sees one edit. Qt counts
        offsets and lengths in UTF-16 units; GTK counts offsets in characters and the
        length in UTF-8 bytes.
        """
        caret = max(self.caret(ref), 0)
        qt = self.toolkit(ref).lower().startswith("qt")
        units = len(text.encode("utf-16-le")) // 2
        length = units if qt else len(text.encode("utf-8"))
        took = self.call(ref, _EDITABLE, "InsertText", "isi", (caret, text, length))
        if not took:
            return False
        end = caret + (units if qt else len(text))
        with contextlib.suppress(Unavailable):
            if self.caret(ref) == caret:
                self.call(ref, _TEXT, "SetCaretOffset", "i", (end,))
        return True

    def delete_before_caret(self, ref: Ref, count: int) -> bool:
        """Delete ``count`` offsets before the caret (what BackSpace would take)."""
        caret = max(self.caret(ref), 0)
        start = max(caret - count, 0)
        return bool(self.call(ref, _EDITABLE, "DeleteText", "ii", (start, caret)))


def _sequence(value: object) -> list[object]:
    if isinstance(value, (list, tuple)):
        return list(value)
    return []


def _pairs(value: object) -> list[tuple[object, object]]:
    return [
        (item[0], item[1])
        for item in _sequence(value)
        if isinstance(item, (list, tuple)) and len(item) == 2
    ]
