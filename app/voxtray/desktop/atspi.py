"""The desktop's accessibility bus (AT-SPI), spoken to over D-Bus with jeepney.

What screen readers ask, Voxtray asks too: is there an accessibility bus; which widget has
the focus, in which application; does it take text; what text does it hold; and, for the
`atspi` output, insert text at its caret through ``EditableText`` with no keyboard at all.

The bus address comes from ``org.a11y.Bus.GetAddress`` on the session bus. The focused
widget is found by walking down from the registry's applications through what is showing,
active windows first, to the one whose state says FOCUSED. Every call has a deadline, and a
whole question (where is the focus) has one too, so an application that hangs, or a tree
that is slow to walk, costs at most that. An answer of the wrong D-Bus type is as good as
none. `Unavailable` says, in one line, why nothing can be known (no session bus, no
accessibility bus, nothing exposed, too slow, an answer that cannot be read).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from voxtray.desktop.bus import BusError, BusLink, Deadline, connect

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 0.5
"""The longest one question to one application (or connecting to a bus) may take."""
INSERT_TIMEOUT_S = 2.0
"""How long an application has to answer an insertion: it is the text itself, not a check,
and a busy application still takes it."""
MAX_NODES = 4000
"""The most widgets one search for the focus visits (a huge table stops it, not a hang)."""

_REGISTRY = "org.a11y.atspi.Registry"
_ROOT = "/org/a11y/atspi/accessible/root"
_ACCESSIBLE = "org.a11y.atspi.Accessible"
_TEXT = "org.a11y.atspi.Text"
_EDITABLE = "org.a11y.atspi.EditableText"
_APPLICATION = "org.a11y.atspi.Application"
_NULL_PATH = "/org/a11y/atspi/null"
_PROPERTIES = "org.freedesktop.DBus.Properties"


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


class Unavailable(Exception):
    """Nothing can be learnt over the accessibility bus; the message says why, in one line."""


class Unanswered(Unavailable):
    """An insertion was asked for but not answered as it should be: the text may be there."""


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
        link = connect(session, timeout)
    except BusError as exc:
        raise Unavailable(f"no accessibility: the session bus does not answer ({exc})") from exc
    try:
        reply = link.call(message, timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise Unavailable(f"no accessibility: the session bus does not answer ({exc})") from exc
    finally:
        link.close()
    missing = "no accessibility bus on the session bus (at-spi2-core not running)"
    (address,) = _answer(reply, "s", missing, "GetAddress")
    if not isinstance(address, str) or not address:
        raise Unavailable("no accessibility: the session bus gave no accessibility bus address")
    return address


def _answer(reply: object, returns: str, refused: str, method: str) -> tuple[object, ...]:
    """The reply's values, which must have the D-Bus signature ``returns``.

    Raises:
        Unavailable: An error reply (``refused``), or values of another type.
    """
    from jeepney import MessageType
    from jeepney.low_level import HeaderFields

    header = getattr(reply, "header", None)
    body = tuple(getattr(reply, "body", ()))
    if header is None or header.message_type is MessageType.error:
        detail = body[0] if body and isinstance(body[0], str) else ""
        raise Unavailable(f"{refused}{': ' + detail if detail else ''}")
    signature = header.fields.get(HeaderFields.signature, "")
    if signature != returns:
        got = f"'{signature}'" if signature else "nothing"
        raise Unavailable(f"unreadable answer to {method}: {got} where '{returns}' was due")
    return body


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
        self._connection: BusLink | None = None

    def connect(self) -> None:
        """Open the connection now (later calls reuse it).

        Raises:
            Unavailable: There is no accessibility bus, or it did not answer lately.
        """
        with self._lock:
            self._open()

    def _open(self) -> BusLink:
        if self._connection is None:
            address = bus_address(self._env, self._timeout)
            try:
                self._connection = connect(address, self._timeout)
            except BusError as exc:
                raise Unavailable(f"no accessibility: its bus does not answer ({exc})") from exc
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
        returns: str,
        signature: str | None = None,
        args: tuple[object, ...] = (),
        *,
        deadline: Deadline | None = None,
        timeout: float | None = None,
    ) -> tuple[object, ...]:
        """One method call on ``ref``; its values, which must have the signature ``returns``.

        Args:
            deadline: When the whole question this call is part of must be over.
            timeout: This call's own limit (by default the one given at creation).

        Raises:
            Unavailable: The bus or the application did not answer in time, refused, or
                answered with something that cannot be read.
        """
        from jeepney import DBusAddress, new_method_call

        limit = self._timeout if timeout is None else timeout
        with self._lock:
            try:
                if deadline is not None:
                    limit = deadline.limit(limit)
                message = new_method_call(
                    DBusAddress(ref.path, bus_name=ref.bus_name, interface=interface),
                    method,
                    signature,
                    args,
                )
                reply = self._open().call(message, limit)
            except TimeoutError as exc:
                raise Unavailable(f"{ref.bus_name} did not answer {method} in time") from exc
            except ValueError as exc:
                raise Unavailable(f"cannot ask {ref.bus_name} {method}: {exc}") from exc
            except OSError as exc:
                self._drop()
                raise Unavailable(f"the accessibility bus closed ({exc})") from exc
        return _answer(reply, returns, f"{ref.bus_name} refused {method}", method)

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def prop(
        self, ref: Ref, interface: str, name: str, kind: str, deadline: Deadline | None = None
    ) -> object:
        """A property's value, which must be of D-Bus type ``kind``."""
        (value,) = self.call(
            ref, _PROPERTIES, "Get", "v", "ss", (interface, name), deadline=deadline
        )
        if not (isinstance(value, tuple) and len(value) == 2 and value[0] == kind):
            raise Unavailable(f"unreadable {name} from {ref.bus_name}: not of type '{kind}'")
        return value[1]

    def applications(self, deadline: Deadline | None = None) -> list[Ref]:
        """The applications registered on the bus."""
        return self.children(Ref(_REGISTRY, _ROOT), deadline)

    def children(self, ref: Ref, deadline: Deadline | None = None) -> list[Ref]:
        (found,) = self.call(ref, _ACCESSIBLE, "GetChildren", "a(so)", deadline=deadline)
        return [Ref(str(name), str(path)) for name, path in _pairs(found) if path != _NULL_PATH]

    def states(self, ref: Ref, deadline: Deadline | None = None) -> frozenset[State]:
        (words,) = self.call(ref, _ACCESSIBLE, "GetState", "au", deadline=deadline)
        return states([int(word) for word in _sequence(words) if isinstance(word, int)])

    def widget(
        self,
        ref: Ref,
        app: str = "",
        state: frozenset[State] | None = None,
        deadline: Deadline | None = None,
    ) -> Widget:
        """What ``ref`` is: its role, name, states and interfaces."""
        (names,) = self.call(ref, _ACCESSIBLE, "GetInterfaces", "as", deadline=deadline)
        (role,) = self.call(ref, _ACCESSIBLE, "GetRoleName", "s", deadline=deadline)
        return Widget(
            ref,
            app,
            str(role),
            str(self.prop(ref, _ACCESSIBLE, "Name", "s", deadline)),
            self.states(ref, deadline) if state is None else state,
            frozenset(str(name) for name in _sequence(names)),
        )

    def focused(self, deadline: Deadline | None = None) -> Widget | None:
        """The widget with the keyboard focus, or None when no exposed application has one.

        Active windows are searched first; what is not showing is not entered.

        Args:
            deadline: When the search must be over; past it, `Unavailable`.

        Raises:
            Unavailable: There is no accessibility bus, or it did not say within
                ``deadline``.
        """
        budget = [MAX_NODES]
        apps = self.applications(deadline)
        later: list[tuple[Ref, str]] = []
        for app in apps:
            try:
                name = str(self.prop(app, _ACCESSIBLE, "Name", "s", deadline))
                windows = self.children(app, deadline)
            except Unavailable as exc:
                _out_of_time(deadline, exc)
                log.debug("skipping an application: %s", exc)
                continue
            for window in windows:
                try:
                    state = self.states(window, deadline)
                except Unavailable as exc:
                    _out_of_time(deadline, exc)
                    continue
                if State.ACTIVE in state:
                    found = self._search(window, state, name, budget, deadline)
                    if found is not None:
                        return found
                elif State.SHOWING in state:
                    later.append((window, name))
        for window, name in later:
            try:
                found = self._search(window, self.states(window, deadline), name, budget, deadline)
            except Unavailable as exc:
                _out_of_time(deadline, exc)
                continue
            if found is not None:
                return found
        return None

    def _search(
        self,
        ref: Ref,
        state: frozenset[State],
        app: str,
        budget: list[int],
        deadline: Deadline | None,
    ) -> Widget | None:
        stack = [(ref, state)]
        while stack and budget[0] > 0:
            node, node_state = stack.pop()
            budget[0] -= 1
            if State.FOCUSED in node_state:
                return self.widget(node, app, node_state, deadline)
            try:
                kids = self.children(node, deadline)
            except Unavailable as exc:
                _out_of_time(deadline, exc)
                continue
            for child in reversed(kids):
                try:
                    child_state = self.states(child, deadline)
                except Unavailable as exc:
                    _out_of_time(deadline, exc)
                    continue
                if State.SHOWING in child_state or State.FOCUSED in child_state:
                    stack.append((child, child_state))
        return None

    # --- text ---------------------------------------------------------------------------

    def text(self, ref: Ref, deadline: Deadline | None = None, timeout: float | None = None) -> str:
        """All the text ``ref`` holds (``timeout``: the call's own limit, as in `call`)."""
        (text,) = self.call(
            ref, _TEXT, "GetText", "s", "ii", (0, -1), deadline=deadline, timeout=timeout
        )
        return str(text)

    def caret(self, ref: Ref) -> int:
        caret = self.prop(ref, _TEXT, "CaretOffset", "i")
        if not isinstance(caret, int):
            raise Unavailable(f"unreadable CaretOffset from {ref.bus_name}")
        return caret

    def toolkit(self, ref: Ref) -> str:
        """The toolkit of the application that owns ``ref`` ("Qt", "GAIL", ...)."""
        return str(self.prop(Ref(ref.bus_name, _ROOT), _APPLICATION, "ToolkitName", "s"))

    def insert(self, ref: Ref, text: str) -> bool:
        """Insert ``text`` at the caret and leave the caret after it; whether it took it.

        The application's own insertion is used, so its undo sees one edit. Qt counts
        offsets and lengths in UTF-16 units; GTK counts offsets in characters and the
        length in UTF-8 bytes. The application has `INSERT_TIMEOUT_S` to answer.

        Raises:
            Unanswered: The insertion was asked for, and no clear answer came (an error,
                an unreadable answer or none in time): the text may or may not be there.
            Unavailable: Nothing was inserted: the bus could not say where the caret is.
        """
        caret = max(self.caret(ref), 0)
        qt = self.toolkit(ref).lower().startswith("qt")
        units = len(text.encode("utf-16-le")) // 2
        length = units if qt else len(text.encode("utf-8"))
        try:
            (took,) = self.call(
                ref, _EDITABLE, "InsertText", "b", "isi", (caret, text, length),
                timeout=INSERT_TIMEOUT_S,
            )  # fmt: skip
        except Unavailable as exc:
            raise Unanswered(str(exc)) from exc
        if not took:
            return False
        end = caret + (units if qt else len(text))
        with contextlib.suppress(Unavailable):
            if self.caret(ref) == caret:
                self.call(ref, _TEXT, "SetCaretOffset", "b", "i", (end,))
        return True

    def delete_before_caret(self, ref: Ref, count: int) -> bool:
        """Delete ``count`` offsets before the caret (what BackSpace would take)."""
        caret = max(self.caret(ref), 0)
        start = max(caret - count, 0)
        (done,) = self.call(ref, _EDITABLE, "DeleteText", "b", "ii", (start, caret))
        return bool(done)


def _out_of_time(deadline: Deadline | None, exc: Unavailable) -> None:
    """Past the deadline, one application's failure ends the whole search."""
    if deadline is not None and deadline.left() <= 0:
        raise Unavailable(
            f"no accessibility: the bus did not say within {1000 * deadline.seconds:.0f} ms"
        ) from exc


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
