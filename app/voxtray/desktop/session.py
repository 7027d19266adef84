"""The desktop session: which display server and which desktop, judged from an environment.

Hotkeys and text output ask this one place whether the session is Wayland, X11 (or X11
through XWayland), Windows or macOS, and which desktop runs it, so they always agree.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass


class DisplayServer(enum.StrEnum):
    """What draws the windows; WINDOWS and MACOS are the platforms' own window systems."""

    WAYLAND = "wayland"
    X11 = "x11"
    WINDOWS = "windows"
    MACOS = "macos"
    NONE = "none"


class Desktop(enum.StrEnum):
    """The desktop environment or compositor; UNKNOWN when nothing names it."""

    GNOME = "gnome"
    KDE = "kde"
    SWAY = "sway"
    HYPRLAND = "hyprland"
    WAYFIRE = "wayfire"
    RIVER = "river"
    XFCE = "xfce"
    CINNAMON = "cinnamon"
    MATE = "mate"
    LXQT = "lxqt"
    LXDE = "lxde"
    BUDGIE = "budgie"
    UNITY = "unity"
    COSMIC = "cosmic"
    UNKNOWN = "unknown"


# XDG_CURRENT_DESKTOP entries (upper-cased) to desktops.
_DESKTOP_NAMES = {
    "GNOME": Desktop.GNOME,
    "KDE": Desktop.KDE,
    "SWAY": Desktop.SWAY,
    "HYPRLAND": Desktop.HYPRLAND,
    "WAYFIRE": Desktop.WAYFIRE,
    "RIVER": Desktop.RIVER,
    "XFCE": Desktop.XFCE,
    "X-CINNAMON": Desktop.CINNAMON,
    "CINNAMON": Desktop.CINNAMON,
    "MATE": Desktop.MATE,
    "LXQT": Desktop.LXQT,
    "LXDE": Desktop.LXDE,
    "BUDGIE": Desktop.BUDGIE,
    "BUDGIE-DESKTOP": Desktop.BUDGIE,
    "UNITY": Desktop.UNITY,
    "COSMIC": Desktop.COSMIC,
}
# Variables a desktop sets for its own clients, for sessions without XDG_CURRENT_DESKTOP.
_DESKTOP_MARKERS = (
    ("SWAYSOCK", Desktop.SWAY),
    ("HYPRLAND_INSTANCE_SIGNATURE", Desktop.HYPRLAND),
    ("KDE_FULL_SESSION", Desktop.KDE),
    ("GNOME_DESKTOP_SESSION_ID", Desktop.GNOME),
)


@dataclass(frozen=True)
class DesktopSession:
    """One session's display server and desktop.

    Attributes:
        server: The display server the session runs on.
        desktops: Every desktop the environment names, the first one leading
            (`ubuntu:GNOME` gives GNOME); empty when none is known.
        wayland_display: `WAYLAND_DISPLAY`, or "" when unset.
        x11_display: `DISPLAY`, or "" when unset (XWayland's, on Wayland).
        platform: `sys.platform` of the session.
    """

    server: DisplayServer
    desktops: tuple[Desktop, ...] = ()
    wayland_display: str = ""
    x11_display: str = ""
    platform: str = "linux"

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, platform: str | None = None
    ) -> DesktopSession:
        """Judge a session from an environment.

        Args:
            env: The environment; `os.environ` if None.
            platform: `sys.platform` if None.
        """
        env = os.environ if env is None else env
        platform = sys.platform if platform is None else platform
        return cls(
            server=_server(env, platform),
            desktops=_desktops(env),
            wayland_display=env.get("WAYLAND_DISPLAY", ""),
            x11_display=env.get("DISPLAY", ""),
            platform=platform,
        )

    @property
    def wayland(self) -> bool:
        """Whether the session is Wayland (XWayland's DISPLAY may be set as well)."""
        return self.server is DisplayServer.WAYLAND

    @property
    def x11(self) -> bool:
        """Whether the session is a plain X11 one (not X11 through XWayland)."""
        return self.server is DisplayServer.X11

    @property
    def xwayland(self) -> bool:
        """Whether X11 clients can connect too, through XWayland, on a Wayland session."""
        return self.wayland and bool(self.x11_display)

    @property
    def native(self) -> bool:
        """Whether this is Windows or macOS rather than a Unix display server."""
        return self.server in (DisplayServer.WINDOWS, DisplayServer.MACOS)

    @property
    def desktop(self) -> Desktop:
        """The leading desktop, UNKNOWN when none is known."""
        return self.desktops[0] if self.desktops else Desktop.UNKNOWN

    def __str__(self) -> str:
        server = "Wayland with XWayland" if self.xwayland else str(self.server)
        return server if self.desktop is Desktop.UNKNOWN else f"{self.desktop} on {server}"


def _server(env: Mapping[str, str], platform: str) -> DisplayServer:
    if platform == "win32":
        return DisplayServer.WINDOWS
    if platform == "darwin":
        return DisplayServer.MACOS
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE", "") == "wayland":
        return DisplayServer.WAYLAND
    if env.get("DISPLAY"):
        return DisplayServer.X11
    return DisplayServer.NONE


def _desktops(env: Mapping[str, str]) -> tuple[Desktop, ...]:
    named = [
        _DESKTOP_NAMES[part]
        for part in env.get("XDG_CURRENT_DESKTOP", "").upper().split(":")
        if part in _DESKTOP_NAMES
    ]
    named += [desktop for variable, desktop in _DESKTOP_MARKERS if env.get(variable)]
    for variable in ("XDG_SESSION_DESKTOP", "DESKTOP_SESSION"):
        name = env.get(variable, "").upper()
        if name in _DESKTOP_NAMES:
            named.append(_DESKTOP_NAMES[name])
    return tuple(dict.fromkeys(named))
