"""A keyboard lent by the desktop: the RemoteDesktop portal's session with its keyboard.

The one way GNOME and KDE on Wayland let an ordinary program press keys in other windows:
no root, no ``input`` group, no uinput daemon. The desktop asks the user once (a dialog
"allow remote interaction"); the session then lasts until Voxtray quits or the desktop
revokes it. Measured on Debian 12 (xdg-desktop-portal 1.16, mutter 43, kwin 5.27):

- CreateSession, SelectDevices (keyboard) and Start answer within 10 ms apart from the
  dialog; a key (``NotifyKeyboardKeysym``, press or release) is one call of about 0.2 ms.
- A keysym the active layout lacks is dropped by the compositor without an error (mutter
  logs "No keycode found for keyval"), so only text the layout surely holds is typed.
- mutter adds the session's keyboard to the seat on its first key; until then the seat
  has none (wl-copy says "This seat has no keyboard"). `start` presses Shift once.
- The 1.16 frontend ignores ``persist_mode``: it asks at every session start. From 1.17 the
  restore token makes later starts silent; it is kept in `ConsentStore`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxtray.desktop.consent import Consent, ConsentStore
from voxtray.desktop.portal import (
    PORTAL_NAME,
    REMOTE_DESKTOP,
    SESSION,
    PortalError,
    PortalLink,
    bus_address,
    connect,
    interface_version,
)

if TYPE_CHECKING:
    from jeepney import Message

log = logging.getLogger(__name__)

KEYBOARD = 1
"""The device type bit for a keyboard (AvailableDeviceTypes, SelectDevices ``types``)."""
PERSIST_UNTIL_REVOKED = 2
CONSENT_TIMEOUT_S = 120.0
"""How long the desktop's question may stay open before the start gives up."""

SHIFT_L = 0xFFE1
CONTROL_L = 0xFFE3
INSERT = 0xFF63
KEYSYMS = {
    "BackSpace": 0xFF08,
    "Tab": 0xFF09,
    "Return": 0xFF0D,
    "Escape": 0xFF1B,
    "Delete": 0xFFFF,
}
_CHARACTER_KEYSYMS = {"\n": KEYSYMS["Return"], "\t": KEYSYMS["Tab"]}


def keysym_of(character: str) -> int | None:
    """The keysym that types ``character`` on any Latin layout: printable ASCII (whose
    keysyms equal their code points), newline and tab; None for anything else."""
    if character in _CHARACTER_KEYSYMS:
        return _CHARACTER_KEYSYMS[character]
    return ord(character) if " " <= character <= "~" else None


def typable(text: str) -> bool:
    """Whether every character of ``text`` can be typed as a keysym."""
    return all(keysym_of(character) is not None for character in text)


@dataclass(frozen=True)
class Grant:
    """How a start went: granted or not, why not, and what it cost."""

    granted: bool
    reason: str = ""
    seconds: float = 0.0
    asked: bool = True
    """False when a restore token started it without a question."""


def portal_problem(env: Mapping[str, str]) -> str | None:
    """Why the portal cannot lend a keyboard on this session (one line), or None."""
    link = connect(env)
    if isinstance(link, str):
        return link
    try:
        if interface_version(link, REMOTE_DESKTOP) is None:
            return "the desktop portal offers no RemoteDesktop (install xdg-desktop-portal)"
        types = link.property(REMOTE_DESKTOP, "AvailableDeviceTypes")
        if not isinstance(types, int) or not types & KEYBOARD:
            return "the desktop's RemoteDesktop portal lends no keyboard"
    except PortalError as exc:
        return str(exc)
    finally:
        link.close()
    return None


class RemoteKeyboard:
    """One RemoteDesktop session with a keyboard, started on demand, for any thread.

    Args:
        env: The session's environment (its bus).
        consent: Where the restore token and the last answer are kept.
    """

    def __init__(self, env: Mapping[str, str], consent: ConsentStore) -> None:
        self.env = dict(env)
        self.consent = consent
        self._lock = threading.RLock()
        self._link: PortalLink | None = None
        self._session: str | None = None
        self._ending = False
        self.last_grant: Grant | None = None

    @property
    def active(self) -> bool:
        with self._lock:
            return self._session is not None

    @property
    def session(self) -> str | None:
        """The portal session's object path while one is started."""
        with self._lock:
            return self._session

    def start(self, timeout: float = CONSENT_TIMEOUT_S) -> Grant:
        """Start the session, asking the user if the desktop must; idempotent.

        Never raises: a refusal or a failure is a `Grant` that says why, and is recorded.
        """
        with self._lock:
            if self._ending:
                return Grant(False, "remote control was closed")
            if self._session is not None:
                return Grant(True, asked=False)
            self._drop()  # a link whose portal went away (see `_portal_changed`)
            started = time.monotonic()
            try:
                grant = self._start(timeout)
            except PortalError as exc:
                self._drop()
                grant = Grant(False, str(exc))
            if self._ending and self._session is not None:  # closed while the desktop asked
                self._end_session()
                grant = Grant(False, "remote control was closed")
            self.last_grant = Grant(
                grant.granted, grant.reason, time.monotonic() - started, grant.asked
            )
            return self.last_grant

    def _start(self, timeout: float) -> Grant:
        address = bus_address(self.env)
        if address is None:
            raise PortalError("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        link = self._link = PortalLink(address)
        kept = self.consent.load()
        created = link.request(
            REMOTE_DESKTOP, "CreateSession", "a{sv}",
            ({"session_handle_token": ("s", link.token())},), timeout=10,
        )  # fmt: skip
        session = created.results.get("session_handle")
        if not created.granted or not isinstance(session, str):
            raise PortalError("the desktop portal would not open a remote-desktop session")
        options: dict[str, object] = {
            "types": ("u", KEYBOARD),
            "persist_mode": ("u", PERSIST_UNTIL_REVOKED),
        }
        if kept.restore_token:
            options["restore_token"] = ("s", kept.restore_token)
        selected = link.request(REMOTE_DESKTOP, "SelectDevices", "oa{sv}", (session, options), 10)
        if not selected.granted:
            raise PortalError("the desktop portal refused a keyboard")
        answer = link.request(REMOTE_DESKTOP, "Start", "osa{sv}", (session, "", {}), timeout)
        if not answer.granted:
            link.close_session(session)
            self.consent.save(Consent.DENIED)
            self._drop()
            return Grant(False, "remote control was not allowed on the desktop's question")
        devices = answer.results.get("devices")
        if isinstance(devices, int) and not devices & KEYBOARD:
            link.close_session(session)
            self._drop()
            return Grant(False, "the desktop allowed remote control without the keyboard")
        token = answer.results.get("restore_token")
        self.consent.save(Consent.GRANTED, token if isinstance(token, str) else None)
        self._session = session
        link.watch(SESSION, "Closed", lambda _message: self._revoked(), path=session)
        link.watch("org.freedesktop.DBus", "NameOwnerChanged", self._portal_changed)
        self._tap([SHIFT_L])  # gives a seat without keyboard its keyboard (mutter)
        return Grant(True, asked=not (kept.restore_token and token == kept.restore_token))

    def _revoked(self) -> None:
        """The desktop ended the session (the user withdrew the permission)."""
        with self._lock:
            if self._ending or self._session is None:
                return
            self._session = None
        self.consent.save(Consent.REVOKED)

    def _portal_changed(self, message: Message) -> None:
        """The portal restarted: its sessions are gone with it, the consent is not. The next
        key starts a session again (the restore token makes it silent)."""
        body = tuple(message.body)
        if len(body) == 3 and body[0] == PORTAL_NAME and body[2]:
            log.info("the desktop portal restarted: remote control starts again at the next key")
            with self._lock:
                self._session = None  # the link is closed by the next start, not on its thread

    def press(self, keysym: int, pressed: bool) -> None:
        """Press or release one key.

        Raises:
            PortalError: No session, or the portal refused.
        """
        with self._lock:
            session, link = self._session, self._link
        if session is None or link is None:
            raise PortalError("remote control is not allowed now: no session is open")
        link.call(
            REMOTE_DESKTOP, "NotifyKeyboardKeysym", "oa{sv}iu", (session, {}, keysym, int(pressed))
        )

    def _tap(self, keys: Sequence[int]) -> None:
        for key in keys:
            self.press(key, True)
        for key in reversed(keys):
            self.press(key, False)

    def _tap_first(self, keys: Sequence[int]) -> None:
        """The first keys of a text or a chord. Where the portal no longer knows the session
        (it restarted before its new owner was announced), nothing went through yet: the
        session is started again, once, and the keys pressed on it."""
        try:
            self._tap(keys)
        except PortalError:
            with self._lock:
                if self._ending or self._session is None:
                    raise
                self._session = None
            if not self.start().granted:
                raise
            self._tap(keys)

    def chord(self, keys: Sequence[int]) -> None:
        """Hold ``keys`` in order, release them in reverse (ctrl+shift+v, shift+Insert)."""
        self._tap_first(keys)

    def type_text(self, text: str) -> None:
        """Type ``text``, which `typable` accepted.

        Raises:
            PortalError: A character has no keysym here, or the portal refused.
        """
        keysyms = [keysym_of(character) for character in text]
        for character, keysym in zip(text, keysyms, strict=True):
            if keysym is None:
                raise PortalError(f"cannot type {character!r} as a key")
        for index, keysym in enumerate(keysyms):
            assert keysym is not None
            (self._tap_first if index == 0 else self._tap)([keysym])

    def _drop(self) -> None:
        link, self._link, self._session = self._link, None, None
        if link is not None:
            link.close()

    def close(self) -> None:
        """End the session (the desktop's indicator goes away). Never waits on the desktop's
        question: a start still waiting for the answer ends its session itself."""
        self._ending = True
        if not self._lock.acquire(timeout=1.0):
            return
        try:
            self._end_session()
        finally:
            self._lock.release()

    def _end_session(self) -> None:
        if self._link is not None and self._session is not None:
            with contextlib.suppress(PortalError):
                self._link.close_session(self._session)
        self._drop()
