"""Which Qt platform the tray app runs on, chosen from the session it was started in.

Qt's own default would start on ``offscreen`` or ``xcb`` where a user expects a tray icon:
WAYLAND_DISPLAY means a native Wayland client, DISPLAY an X11 one (Xwayland included), and
neither is an error the user can act on rather than an invisible app. A QT_QPA_PLATFORM
the user set is theirs to keep.

Measured on sway (wlroots): Qt's window flags (Tool, WindowDoesNotAcceptFocus,
WA_ShowWithoutActivating) are not honoured, so any window Voxtray maps takes the keyboard
focus and the dictated text lands in it. Native Wayland therefore gets no HUD window (the
tray tooltip carries the state); on X11 and Xwayland the HUD bypasses the window manager,
which keeps the focus where it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from voxtray.desktop.app_id import APP_ID
from voxtray.errors import ExitCode, VoxtrayError

WAYLAND = "wayland"
XCB = "xcb"


class NoDesktopError(VoxtrayError):
    """Neither a Wayland nor an X11 session to show the tray app in."""

    exit_code = ExitCode.NO_DESKTOP


def session_platform(env: Mapping[str, str]) -> str:
    """The QT_QPA_PLATFORM value: the user's own, else from the session.

    Raises:
        NoDesktopError: Neither WAYLAND_DISPLAY nor DISPLAY is set (and no QT_QPA_PLATFORM).
    """
    chosen = env.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        return chosen
    if env.get("WAYLAND_DISPLAY"):
        # Qt tries them in order: Xwayland if the Wayland plugin cannot load.
        return f"{WAYLAND};{XCB}" if env.get("DISPLAY") else WAYLAND
    if env.get("DISPLAY"):
        return XCB
    raise NoDesktopError(
        "no desktop session to show the tray in: neither WAYLAND_DISPLAY nor DISPLAY is set "
        "(run it from your desktop; `voxtray transcribe` works without one)"
    )


def prepare_platform(env: MutableMapping[str, str] | None = None) -> str:
    """Choose the platform before the QApplication exists; returns its name.

    Raises:
        NoDesktopError: No session to run in.
    """
    environment = os.environ if env is None else env
    platform = session_platform(environment)
    environment["QT_QPA_PLATFORM"] = platform
    # The app_id a Wayland compositor matches rules and icons on; before any window exists.
    QGuiApplication.setDesktopFileName(APP_ID)
    return platform


def is_native_wayland(platform_name: str) -> bool:
    """Whether Qt runs as a Wayland client (``wayland``, ``wayland-egl``...)."""
    return platform_name.split(":")[0].startswith(WAYLAND)


def hud_can_show(platform_name: str) -> bool:
    """Whether a HUD window can be shown without taking the focus on this platform."""
    return not is_native_wayland(platform_name)


def hud_window_flags() -> Qt.WindowType:
    """An overlay the window manager never manages, so it is never given the focus."""
    return (
        Qt.WindowType.FramelessWindowHint
        | Qt.WindowType.WindowStaysOnTopHint
        | Qt.WindowType.Tool
        | Qt.WindowType.WindowDoesNotAcceptFocus
        | Qt.WindowType.X11BypassWindowManagerHint
        | Qt.WindowType.WindowTransparentForInput
    )
