"""Push-to-talk through the desktop's GlobalShortcuts portal (KDE Plasma 5.27+, GNOME 48+).

The desktop owns the key: Voxtray asks it to bind a shortcut with the user's hotkey as the
preferred trigger, and hears ``Activated`` when the key goes down and ``Deactivated`` when
it comes up, which is hold-to-talk with no access to the keyboard at all. The shortcut is
passed with CreateSession as well as BindShortcuts: Plasma 5.27 binds from CreateSession
(its BindShortcuts only opens System Settings), later desktops from BindShortcuts. When the
portal restarts, its sessions are gone: the listener sees the portal's bus name change
owner and binds again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from voxtray.choices import HotkeyBackend
from voxtray.desktop.app_id import register
from voxtray.desktop.portal import (
    GLOBAL_SHORTCUTS,
    PORTAL_NAME,
    SESSION,
    Answer,
    PortalError,
    PortalLink,
    bus_address,
    connect,
    interface_version,
    plain,
)
from voxtray.desktop.portal_backends import serves_here, serving_names
from voxtray.hotkeys.base import Binding, Callback, ListenerBase
from voxtray.hotkeys.keys import Hotkey, kind

if TYPE_CHECKING:
    from jeepney import Message

log = logging.getLogger(__name__)

GLOBAL_SHORTCUTS_IMPL = "org.freedesktop.impl.portal.GlobalShortcuts"
IMPL_SESSION = "org.freedesktop.impl.portal.Session"
SHORTCUT_ID = "push-to-talk"
SESSION_NAME = "voxtray_push_to_talk"
"""The same shortcuts-session token at every start: Plasma 5.27 names the shortcut's
component after it (a program whose portal has no app registry has no other name) and
keeps that component's key in kglobalshortcutsrc. A token that changed each run left the
key with the first run's component: later runs were bound but never activated (measured)."""
DESCRIPTION = "Voxtray: hold to dictate"
NOT_BOUND = "the desktop did not bind the push-to-talk shortcut"
BIND_TIMEOUT_S = 60.0
"""A desktop may ask the user to confirm the binding (GNOME 48 shows a dialog)."""

_TRIGGER_MODIFIERS = {"ctrl": "CTRL", "alt": "ALT", "shift": "SHIFT", "super": "LOGO"}
_TRIGGER_KEYS = {
    "space": "space", "enter": "Return", "tab": "Tab", "esc": "Escape",
    "backspace": "BackSpace", "delete": "Delete",
}  # fmt: skip


def preferred_trigger(hotkey: Hotkey) -> str:
    """The hotkey in the shortcuts specification's form: ``CTRL+ALT+space``."""
    mods = sorted({kind(name) for name in hotkey.modifiers}, key=list(_TRIGGER_MODIFIERS).index)
    key = hotkey.key
    if hotkey.modifier_only:
        key = {"ctrl": "Control_L", "alt": "Alt_L", "shift": "Shift_L", "super": "Super_L"}[
            kind(key)
        ]
        if key.endswith("_L") and hotkey.key.startswith("right_"):
            key = key[:-1] + "R"
    else:
        function_key = key.startswith("f") and key[1:].isdigit()
        key = _TRIGGER_KEYS.get(key, key.upper() if function_key else key)
    return "+".join([*(_TRIGGER_MODIFIERS[m] for m in mods), key])


def shortcuts_problem(env: Mapping[str, str]) -> str | None:
    """Why push-to-talk cannot go through the portal here (one line), or None."""
    link = connect(env)
    if isinstance(link, str):
        return link
    try:
        if interface_version(link, GLOBAL_SHORTCUTS) is None:
            return "this desktop's portal has no GlobalShortcuts (GNOME before 48, wlroots)"
    finally:
        link.close()
    return serves_here(GLOBAL_SHORTCUTS_IMPL, env)


class PortalShortcutBackend(ListenerBase):
    """The hotkey as a desktop shortcut bound through the GlobalShortcuts portal.

    `start` returns once the session exists: a desktop that binds at once (Plasma) is
    ready then; one that asks the user first (GNOME 48) is asked on a thread, so the
    question never holds up the caller. `bind_problem` says why a binding failed.
    """

    name = HotkeyBackend.PORTAL

    def __init__(self, env: Mapping[str, str] | None = None, platform: str | None = None) -> None:
        super().__init__(env, platform)
        self._lock = threading.RLock()
        self._link: PortalLink | None = None
        self._session: str | None = None
        self._hotkey: Hotkey | None = None
        self._callbacks: tuple[Callback, Callback] | None = None
        self._held = False
        self.bound_trigger = ""
        """How the desktop describes the trigger it bound (may differ from the preferred)."""
        self.bind_problem: str | None = None
        """Why the shortcut is not bound, once binding failed; None while bound or asking."""
        self.binds = 0
        """How many times the shortcut was bound (1 at start, +1 each portal restart)."""

    def available(self) -> tuple[bool, str]:
        if not self.session.wayland:
            return False, "the GlobalShortcuts portal is used on Wayland"
        problem = shortcuts_problem(self.env)
        if problem is not None:
            return False, problem
        return True, "bound as a desktop shortcut through the GlobalShortcuts portal"

    def binding(self) -> Binding:
        bound = self._session is not None and self.binds > 0 and self.bind_problem is None
        return Binding(bound, self.bound_trigger, self.bind_problem, self.binds)

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Bind the shortcut and follow its signals.

        Raises:
            PortalError: No session bus, or the portal would not open a shortcuts session.
        """
        self.stop()
        address = bus_address(self.env)
        if address is None:
            raise PortalError("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        with self._lock:
            self._hotkey, self._callbacks = hotkey, (on_press, on_release)
            try:
                self._link = self._connect(address)
                self._bind()
            except PortalError:
                self.stop()
                raise

    def _connect(self, address: str) -> PortalLink:
        """A connection of its own, known to the portal by Voxtray's app ID where the
        portal takes one (GNOME 48 binds only for a named app), that follows the
        shortcut's and the portal's signals."""
        link = PortalLink(address)
        unregistered = register(link, self.env)
        if unregistered is not None:
            log.info("the portal knows Voxtray by its process alone: %s", unregistered)
        try:
            link.watch(GLOBAL_SHORTCUTS, "Activated", lambda m: self._signal(m, True))
            link.watch(GLOBAL_SHORTCUTS, "Deactivated", lambda m: self._signal(m, False))
            link.watch("org.freedesktop.DBus", "NameOwnerChanged", self._owner_changed)
            link.watch(SESSION, "Closed", self._session_closed)
        except PortalError:
            link.close()
            raise
        return link

    def _shortcut(self) -> tuple[str, dict[str, tuple[str, str]]]:
        assert self._hotkey is not None
        details = {
            "description": ("s", DESCRIPTION),
            "preferred_trigger": ("s", preferred_trigger(self._hotkey)),
        }
        return SHORTCUT_ID, details

    def _bind(self) -> None:
        """Open a session with the shortcut; ask for the binding on a thread if the desktop
        did not bind it with the session."""
        link = self._link
        assert link is not None
        shortcut = self._shortcut()
        created = link.request(
            GLOBAL_SHORTCUTS, "CreateSession", "a{sv}",
            ({"session_handle_token": ("s", SESSION_NAME),
              "shortcuts": ("a(sa{sv})", [shortcut])},),
            timeout=10,
        )  # fmt: skip
        session = created.results.get("session_handle")
        if not created.granted or not isinstance(session, str):
            raise PortalError("the desktop would not open a shortcuts session")
        self._session = session
        self.bind_problem = None
        listed = link.request(GLOBAL_SHORTCUTS, "ListShortcuts", "oa{sv}", (session, {}), 10)
        if _bound(listed.results):
            self._bound(listed.results)
            return
        asking = threading.Thread(
            target=self._ask_to_bind, args=(link, session, shortcut), name="voxtray-portal-bind",
            daemon=True,
        )  # fmt: skip
        asking.start()

    def _ask_to_bind(
        self, link: PortalLink, session: str, shortcut: tuple[str, dict[str, tuple[str, str]]]
    ) -> None:
        try:
            answer = link.request(
                GLOBAL_SHORTCUTS, "BindShortcuts", "oa(sa{sv})sa{sv}",
                (session, [shortcut], "", {}), BIND_TIMEOUT_S,
            )  # fmt: skip
        except PortalError as exc:
            problem: str | None = str(exc)
        else:
            problem = None if _answered_bound(answer) else NOT_BOUND
        with self._lock:
            if session != self._session:
                return  # a session since stopped or replaced: its answer says nothing now
            if problem is None:
                self._bound(answer.results)
                return
            self.bind_problem = problem
        log.warning("push-to-talk through the portal: %s", problem)

    def _bound(self, results: dict[str, object]) -> None:
        self.bound_trigger = _trigger(results)
        self.bind_problem = None
        self.binds += 1
        log.info("push-to-talk bound by the desktop as %s", self.bound_trigger or "(no key yet)")

    def _signal(self, message: object, pressed: bool) -> None:
        body: tuple[object, ...] = tuple(getattr(message, "body", ()))
        if len(body) < 2 or body[0] != self._session or body[1] != SHORTCUT_ID:
            return
        self._deliver(pressed)

    def _deliver(self, pressed: bool) -> None:
        callbacks = self._callbacks
        if callbacks is None or self._held == pressed:
            return
        self._held = pressed
        try:
            (callbacks[0] if pressed else callbacks[1])()
        except Exception:  # a callback's failure must not end the signal thread
            log.exception("hotkey callback failed")

    def _owner_changed(self, message: object) -> None:
        body: tuple[object, ...] = tuple(getattr(message, "body", ()))
        if len(body) == 3 and body[0] == PORTAL_NAME and body[2]:
            log.info("the desktop portal restarted: binding the push-to-talk shortcut again")
            self._rebind_later()

    def _session_closed(self, message: Message) -> None:
        from jeepney.low_level import HeaderFields

        if message.header.fields.get(HeaderFields.path) == self._session:
            log.info("the desktop closed the shortcuts session: binding again")
            self._rebind_later()

    def _rebind_later(self) -> None:
        threading.Thread(target=self._rebind, name="voxtray-portal-rebind", daemon=True).start()

    def _rebind(self) -> None:
        """Bind again on a new connection: the desktop's backend may outlive the portal and
        still hold the old session at the old connection's path (Plasma 5.27 refuses a
        second session there), while the session's name, which names the shortcut's
        component, stays the same."""
        self._deliver(False)  # a key held while the portal went away never sends its release
        address = bus_address(self.env)
        old: PortalLink | None = None
        with self._lock:
            if self._link is None or address is None:
                return
            try:
                link = self._connect(address)
            except PortalError as exc:
                self.bind_problem = str(exc)
                log.warning("cannot bind the push-to-talk shortcut again: %s", exc)
                return
            self._end_stale(link, self._session)
            old, self._link, self._session = self._link, link, None
            try:
                self._bind()
            except PortalError as exc:
                self.bind_problem = str(exc)
                log.warning("cannot bind the push-to-talk shortcut again: %s", exc)
        with contextlib.suppress(Exception):
            old.close()

    def _end_stale(self, link: PortalLink, session: str | None) -> None:
        """End the old session at the desktop's backend, which may outlive the portal and
        keep it: GNOME 48's then sends the key to the stale session, which no portal
        forwards (measured: the rebound key never reached Voxtray, about half the time)."""
        if session is None:
            return
        for backend in serving_names(GLOBAL_SHORTCUTS_IMPL, self.env):
            with contextlib.suppress(PortalError):
                link.call(IMPL_SESSION, "Close", "", (), path=session, timeout=1.0,
                          bus_name=backend)  # fmt: skip

    def stop(self) -> None:
        with self._lock:
            link, self._link = self._link, None
            session, self._session = self._session, None
            self._callbacks = None
            self._held = False
            self.bound_trigger, self.bind_problem, self.binds = "", None, 0
        if link is not None:
            if session is not None:
                link.close_session(session)
            with contextlib.suppress(Exception):
                link.close()


def _shortcuts(results: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    listed = results.get("shortcuts")
    found = []
    if isinstance(listed, list):
        for item in listed:
            if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[1], dict):
                found.append((str(item[0]), {str(k): plain(v) for k, v in item[1].items()}))
    return found


def _bound(results: dict[str, object]) -> bool:
    return any(name == SHORTCUT_ID for name, _ in _shortcuts(results))


def _answered_bound(answer: Answer) -> bool:
    """Whether BindShortcuts bound the shortcut: granted with it listed, or, as GNOME 48
    answers a binding it made, code 2 with it listed under a key (its backend leaves the
    code unset; a refusal there lists nothing)."""
    if not _bound(answer.results):
        return False
    return answer.granted or (answer.code == 2 and bool(_trigger(answer.results)))


def _trigger(results: dict[str, object]) -> str:
    for name, details in _shortcuts(results):
        if name == SHORTCUT_ID:
            return str(details.get("trigger_description", ""))
    return ""
