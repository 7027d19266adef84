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

from voxtray.choices import HotkeyBackend
from voxtray.desktop.portal import (
    GLOBAL_SHORTCUTS,
    PORTAL_NAME,
    PortalError,
    PortalLink,
    bus_address,
    interface_version,
    plain,
)
from voxtray.hotkeys.base import Callback, ListenerBase
from voxtray.hotkeys.keys import Hotkey, kind

log = logging.getLogger(__name__)

SHORTCUT_ID = "push-to-talk"
DESCRIPTION = "Voxtray: hold to dictate"
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
    address = bus_address(env)
    if address is None:
        return "no session bus (DBUS_SESSION_BUS_ADDRESS is not set)"
    try:
        link = PortalLink(address, timeout=1.0)
    except PortalError as exc:
        return str(exc)
    try:
        if interface_version(link, GLOBAL_SHORTCUTS) is None:
            return "this desktop's portal has no GlobalShortcuts (GNOME before 48, wlroots)"
    finally:
        link.close()
    return None


class PortalShortcutBackend(ListenerBase):
    """The hotkey as a desktop shortcut bound through the GlobalShortcuts portal."""

    name = HotkeyBackend.PORTAL

    def __init__(self, env: Mapping[str, str] | None = None, platform: str | None = None) -> None:
        super().__init__(env, platform)
        self._lock = threading.Lock()
        self._link: PortalLink | None = None
        self._session: str | None = None
        self._hotkey: Hotkey | None = None
        self._callbacks: tuple[Callback, Callback] | None = None
        self._held = False
        self.bound_trigger = ""
        """How the desktop describes the trigger it bound (may differ from the preferred)."""

    def available(self) -> tuple[bool, str]:
        if not self.session.wayland:
            return False, "the GlobalShortcuts portal is used on Wayland"
        problem = shortcuts_problem(self.env)
        if problem is not None:
            return False, problem
        return True, "bound as a desktop shortcut through the GlobalShortcuts portal"

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        self.stop()
        address = bus_address(self.env)
        if address is None:
            raise PortalError("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        with self._lock:
            self._hotkey, self._callbacks = hotkey, (on_press, on_release)
            self._link = PortalLink(address)
            self._link.watch(GLOBAL_SHORTCUTS, "Activated", lambda m: self._signal(m, True))
            self._link.watch(GLOBAL_SHORTCUTS, "Deactivated", lambda m: self._signal(m, False))
            self._link.watch("org.freedesktop.DBus", "NameOwnerChanged", self._owner_changed)
            self._bind()

    def _bind(self) -> None:
        link, hotkey = self._link, self._hotkey
        assert link is not None
        assert hotkey is not None
        shortcut = (
            SHORTCUT_ID,
            {
                "description": ("s", DESCRIPTION),
                "preferred_trigger": ("s", preferred_trigger(hotkey)),
            },
        )
        created = link.request(
            GLOBAL_SHORTCUTS, "CreateSession", "a{sv}",
            ({"session_handle_token": ("s", link.token()),
              "shortcuts": ("a(sa{sv})", [shortcut])},),
            timeout=10,
        )  # fmt: skip
        session = created.results.get("session_handle")
        if not created.granted or not isinstance(session, str):
            raise PortalError("the desktop would not open a shortcuts session")
        self._session = session
        listed = link.request(GLOBAL_SHORTCUTS, "ListShortcuts", "oa{sv}", (session, {}), 10)
        if not _bound(listed.results):
            answer = link.request(
                GLOBAL_SHORTCUTS, "BindShortcuts", "oa(sa{sv})sa{sv}",
                (session, [shortcut], "", {}), BIND_TIMEOUT_S,
            )  # fmt: skip
            if not answer.granted or not _bound(answer.results):
                raise PortalError("the desktop did not bind the push-to-talk shortcut")
            listed = answer
        self.bound_trigger = _trigger(listed.results)

    def _signal(self, message: object, pressed: bool) -> None:
        body: tuple[object, ...] = tuple(getattr(message, "body", ()))
        if len(body) < 2 or body[0] != self._session or body[1] != SHORTCUT_ID:
            return
        callbacks = self._callbacks
        if callbacks is None or self._held == pressed:
            return
        self._held = pressed
        (callbacks[0] if pressed else callbacks[1])()

    def _owner_changed(self, message: object) -> None:
        body: tuple[object, ...] = tuple(getattr(message, "body", ()))
        if len(body) == 3 and body[0] == PORTAL_NAME and body[2]:
            log.info("the desktop portal restarted: binding the push-to-talk shortcut again")
            threading.Thread(target=self._rebind, name="voxtray-portal-rebind", daemon=True).start()

    def _rebind(self) -> None:
        with self._lock:
            if self._link is None:
                return
            try:
                self._bind()
            except PortalError as exc:
                log.warning("cannot bind the push-to-talk shortcut again: %s", exc)

    def stop(self) -> None:
        with self._lock:
            link, self._link = self._link, None
            session, self._session = self._session, None
            self._callbacks = None
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


def _trigger(results: dict[str, object]) -> str:
    for name, details in _shortcuts(results):
        if name == SHORTCUT_ID:
            return str(details.get("trigger_description", ""))
    return ""
