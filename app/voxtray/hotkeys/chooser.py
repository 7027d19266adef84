"""Pick the hotkey backend for this session, or check the one the user chose.

Every backend is one `Registration` line: the class to load (imported only when used) and
its rank in `auto` on each display server. A new backend is one module plus one line here.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from voxtray.choices import HotkeyBackend
from voxtray.desktop.session import Desktop, DesktopSession, DisplayServer
from voxtray.errors import ExitCode, VoxtrayError
from voxtray.hotkeys.base import HotkeyListener
from voxtray.hotkeys.no_listener import BIND_ADVICE, NoBackend

log = logging.getLogger(__name__)

ListenerFactory = Callable[[Mapping[str, str] | None, str | None], HotkeyListener]

_WAYLAND, _X11, _NONE = DisplayServer.WAYLAND, DisplayServer.X11, DisplayServer.NONE
_WINDOWS, _MACOS = DisplayServer.WINDOWS, DisplayServer.MACOS


@dataclass(frozen=True)
class Registration:
    """One backend the chooser knows.

    Attributes:
        choice: The setting value that names it.
        target: `module:Class`; the class is called with `(env, platform)`.
        auto: Its rank in `auto` per display server, lower tried first; a server it is
            missing from never tries it.
        desktops: Where `auto` tries it, when not on every desktop.
    """

    choice: HotkeyBackend
    target: str
    auto: Mapping[DisplayServer, int] = field(default_factory=dict)
    desktops: frozenset[Desktop] = frozenset()

    def load(self) -> ListenerFactory:
        """The backend's class, imported now."""
        module, _, name = self.target.partition(":")
        factory: ListenerFactory = getattr(importlib.import_module(module), name)
        return factory


REGISTRY = (
    Registration(
        HotkeyBackend.PYNPUT,
        "voxtray.hotkeys.pynput_listener:PynputBackend",
        {_X11: 10, _MACOS: 10, _WINDOWS: 20},
    ),
    Registration(
        HotkeyBackend.KEYBOARD,
        "voxtray.hotkeys.keyboard_listener:KeyboardBackend",
        {_WINDOWS: 10, _X11: 20, _WAYLAND: 10, _NONE: 10},
    ),
    Registration(
        HotkeyBackend.EVDEV,
        "voxtray.hotkeys.evdev_listener:EvdevBackend",
        {_WAYLAND: 5, _NONE: 5, _X11: 30},
    ),
    # Plasma binds the key the portal asks for itself; GNOME 48 once the user adds it in its
    # dialog (Voxtray registers its app ID, which GNOME binds for). On Hyprland the user
    # must bind it in the compositor's config too: there it is chosen by name only.
    Registration(
        HotkeyBackend.PORTAL,
        "voxtray.hotkeys.portal_listener:PortalShortcutBackend",
        {_WAYLAND: 7},
        frozenset({Desktop.KDE, Desktop.GNOME}),
    ),
    Registration(HotkeyBackend.NONE, "voxtray.hotkeys.no_listener:NoBackend"),
)
"""Every backend; `auto` on Wayland skips pynput, which sees keys only in X11 windows, tries
evdev (an `input` group member reads /dev/input without root) first, then on KDE the
desktop's GlobalShortcuts portal (push-to-talk with no group)."""


def registration(choice: HotkeyBackend) -> Registration:
    """The registry line for a backend.

    Raises:
        KeyError: `choice` is AUTO or has no backend.
    """
    for entry in REGISTRY:
        if entry.choice is choice:
            return entry
    raise KeyError(choice)


def auto_order(session: DesktopSession) -> list[HotkeyBackend]:
    """The backends `auto` tries on this session, best first."""
    ranked = sorted(
        (entry.auto[session.server], entry.choice)
        for entry in REGISTRY
        if session.server in entry.auto
        and (not entry.desktops or entry.desktops & set(session.desktops))
    )
    return [choice for _, choice in ranked]


def auto_tries(choice: HotkeyBackend, session: DesktopSession) -> bool:
    """Whether `auto` tries ``choice`` on this session."""
    return choice in auto_order(session)


def choose_backend(
    preferred: HotkeyBackend | str = HotkeyBackend.AUTO,
    env: Mapping[str, str] | None = None,
    *,
    platform: str | None = None,
) -> HotkeyListener:
    """Pick the hotkey backend for this session.

    `auto` takes the keyboard package on Windows, pynput on macOS and X11, and on Wayland
    evdev if /dev/input can be read, the GlobalShortcuts portal on KDE and GNOME 48+, or
    the keyboard package (XWayland shows pynput keys only while an X11 window has focus);
    failing that, `NoBackend` whose reason says what was tried and tells the user to bind
    `voxtray toggle` in the desktop.

    Args:
        preferred: A `HotkeyBackend` (or its value).
        env: The environment to judge the session by; `os.environ` by default.
        platform: `sys.platform` by default.

    Returns:
        A backend, not yet started; `available()` gives the reason it was picked.

    Raises:
        VoxtrayError: `preferred` is unknown, or names a backend unavailable here.
    """
    try:
        choice = HotkeyBackend(preferred)
    except ValueError:
        choices = ", ".join(HotkeyBackend.values())
        raise VoxtrayError(
            f"unknown hotkey backend {preferred!r}: use {choices}", ExitCode.USAGE
        ) from None
    environment = dict(os.environ if env is None else env)
    if choice is not HotkeyBackend.AUTO:
        backend = registration(choice).load()(environment, platform)
        ok, why = backend.available()
        if not ok:
            raise VoxtrayError(f"hotkey backend {choice} is unavailable: {why}", ExitCode.USAGE)
        return backend
    return _choose_auto(environment, platform)


def _choose_auto(env: Mapping[str, str], platform: str | None) -> HotkeyListener:
    session = DesktopSession.from_env(env, platform)
    reasons = []
    for choice in auto_order(session):
        backend = registration(choice).load()(env, platform)
        ok, why = backend.available()
        if ok:
            log.info("hotkeys through %s on %s: %s", choice, session, why)
            return backend
        reasons.append(f"{choice}: {why}")
    tried = "; ".join(reasons)
    if session.wayland:
        reason = f"Wayland lets no app watch global keys ({tried}): {BIND_ADVICE}"
    else:
        reason = f"no global-hotkey backend works here ({tried}): {BIND_ADVICE}"
    log.info("no global hotkeys on %s: %s", session, reason)
    return NoBackend(env, platform, reason=reason)
