"""The window dictated text is meant for, remembered when dictation starts.

X11: the window manager's `_NET_ACTIVE_WINDOW`, or without one the window holding the
input focus (its top-level ancestor). sway: the focused node of ``swaymsg -t get_tree``.
Hyprland: its active window, asked on its command socket.
Anywhere else the target is unknown and every check says it is still focused, so typing
behaves as it always did.
"""

from __future__ import annotations

import enum
import json
import logging
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from voxtray.desktop import hyprland, xlib
from voxtray.desktop.session import Desktop, DesktopSession

log = logging.getLogger(__name__)

_SWAYMSG_TIMEOUT_S = 2.0
_TITLE_LIMIT = 60


class TargetKind(enum.StrEnum):
    """How the target was identified, which decides how it is checked."""

    X11_ACTIVE = "x11-active"
    X11_FOCUS = "x11-focus"
    SWAY = "sway"
    HYPRLAND = "hyprland"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class FocusTarget:
    """One window (or compositor node) that text is typed into.

    Attributes:
        kind: How the window was identified.
        ident: The X window id or sway node id; 0 when unknown.
        description: What to tell the user: `window "title" (0x...)`.
        session: The desktop session it was captured on.
    """

    kind: TargetKind
    ident: int
    description: str
    session: DesktopSession = field(compare=False)
    env: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    app_names: tuple[str, ...] = field(default=(), compare=False)
    """What the desktop calls its app, lower case: X11's WM_CLASS, sway's app_id."""
    title: str = field(default="", compare=False)

    @classmethod
    def unknown(cls, session: DesktopSession) -> FocusTarget:
        """A target nothing can be learnt about: checks always pass."""
        return cls(TargetKind.UNKNOWN, 0, "the focused window", session)

    @classmethod
    def capture(cls, session: DesktopSession, env: Mapping[str, str] | None = None) -> FocusTarget:
        """The window that has the focus now; `unknown` when the session cannot tell.

        Never raises: a desktop that cannot be asked gives an unknown target.
        """
        try:
            if session.x11 and session.x11_display:
                return _capture_x11(session)
            if session.wayland and Desktop.SWAY in session.desktops:
                return _capture_sway(session, dict(env or {}))
            if session.wayland and Desktop.HYPRLAND in session.desktops:
                return _capture_hyprland(session, dict(env or {}))
        except OSError as exc:
            log.debug("cannot tell the focused window: %s", exc)
        return cls.unknown(session)

    @property
    def known(self) -> bool:
        """Whether checks can tell anything (False means they always pass)."""
        return self.kind is not TargetKind.UNKNOWN

    def lost(self) -> str | None:
        """Why text typed now would not reach the target, or None while it would.

        Returns "closed" phrases when the window is gone and "focus moved" phrases when
        another window has the focus; None for an unknown target or when asking fails.
        """
        try:
            if self.kind in (TargetKind.X11_ACTIVE, TargetKind.X11_FOCUS):
                return _x11_lost(self)
            if self.kind is TargetKind.SWAY:
                return _sway_lost(self)
            if self.kind is TargetKind.HYPRLAND:
                return _hyprland_lost(self)
        except OSError as exc:
            log.debug("cannot check the focused window: %s", exc)
        return None

    def still_focused(self) -> bool:
        """Whether the target exists and has the focus (always True when unknown)."""
        return self.lost() is None


def _describe(title: str, ident: int, hexadecimal: bool = True) -> str:
    title = " ".join(title.split())
    if len(title) > _TITLE_LIMIT:
        title = title[: _TITLE_LIMIT - 1] + "…"
    number = f"{ident:#x}" if hexadecimal else str(ident)
    return f'window "{title}" ({number})' if title else f"window {number}"


def _x11_current(display: xlib.XDisplay, kind: TargetKind) -> int:
    if kind is TargetKind.X11_ACTIVE:
        return display.active_window() or 0
    return display.toplevel(display.input_focus())


def _capture_x11(session: DesktopSession) -> FocusTarget:
    with xlib.XDisplay(session.x11_display) as display:
        active = display.active_window()
        kind = TargetKind.X11_ACTIVE if active else TargetKind.X11_FOCUS
        window = _x11_current(display, kind)
        # No focus, or focus following the pointer: no one window is the target.
        if window in (0, 1, display.root()):
            return FocusTarget.unknown(session)
        title = display.window_title(window)
        names = tuple(dict.fromkeys(name.lower() for name in display.window_class(window)))
        description = _describe(title, window)
        return FocusTarget(kind, window, description, session, app_names=names, title=title)


def _x11_lost(target: FocusTarget) -> str | None:
    with xlib.XDisplay(target.session.x11_display) as display:
        if not display.window_exists(target.ident):
            return f"{target.description} was closed"
        now = _x11_current(display, target.kind)
        if now == target.ident:
            return None
        if now in (0, 1, display.root()):
            return f"{target.description} lost the focus"
        return f"the focus moved from {target.description} to {_x11_name(display, now)}"


def _x11_name(display: xlib.XDisplay, window: int) -> str:
    return _describe(display.window_title(window), window)


def _swaymsg_tree(env: Mapping[str, str]) -> dict[str, Any]:
    tool = shutil.which("swaymsg", path=env.get("PATH"))
    if tool is None:
        raise FileNotFoundError("swaymsg not found")
    try:
        done = subprocess.run(
            [tool, "-t", "get_tree"],
            capture_output=True,
            env=dict(env) or None,
            timeout=_SWAYMSG_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise OSError("swaymsg did not answer") from exc
    if done.returncode != 0:
        raise OSError(f"swaymsg failed with status {done.returncode}")
    try:
        tree = json.loads(done.stdout)
    except ValueError as exc:
        raise OSError("swaymsg printed no JSON") from exc
    if not isinstance(tree, dict):
        raise OSError("swaymsg printed no tree")
    return tree


def _sway_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for key in ("nodes", "floating_nodes"):
        for child in node.get(key) or ():
            if isinstance(child, dict):
                yield from _sway_nodes(child)


def _sway_focused(tree: dict[str, Any]) -> dict[str, Any] | None:
    return next((node for node in _sway_nodes(tree) if node.get("focused")), None)


def _sway_title(node: dict[str, Any]) -> str:
    name = node.get("name")
    return name if isinstance(name, str) else ""


def _capture_sway(session: DesktopSession, env: dict[str, str]) -> FocusTarget:
    node = _sway_focused(_swaymsg_tree(env))
    # A workspace or output focused means no window is.
    if node is None or node.get("type") not in ("con", "floating_con"):
        return FocusTarget.unknown(session)
    ident = int(node.get("id", 0))
    title = _sway_title(node)
    description = _describe(title, ident, hexadecimal=False)
    return FocusTarget(
        TargetKind.SWAY, ident, description, session, env, app_names=_sway_app(node), title=title
    )


def _sway_app(node: dict[str, Any]) -> tuple[str, ...]:
    """A native client's app_id; an Xwayland window's WM_CLASS instance and class."""
    properties = node.get("window_properties")
    names = [node.get("app_id")]
    if isinstance(properties, dict):
        names += [properties.get("instance"), properties.get("class")]
    return tuple(dict.fromkeys(n.lower() for n in names if isinstance(n, str) and n))


def _sway_lost(target: FocusTarget) -> str | None:
    tree = _swaymsg_tree(target.env)
    if not any(node.get("id") == target.ident for node in _sway_nodes(tree)):
        return f"{target.description} was closed"
    node = _sway_focused(tree)
    if node is not None and node.get("id") == target.ident:
        return None
    if node is None or node.get("type") not in ("con", "floating_con"):
        return f"{target.description} lost the focus"
    other = _describe(_sway_title(node), int(node.get("id", 0)), hexadecimal=False)
    return f"the focus moved from {target.description} to {other}"


def _capture_hyprland(session: DesktopSession, env: dict[str, str]) -> FocusTarget:
    window = hyprland.active_window(env)
    if window is None:
        return FocusTarget.unknown(session)
    description = _describe(window.title, window.address)
    return FocusTarget(
        TargetKind.HYPRLAND,
        window.address,
        description,
        session,
        env,
        app_names=window.app_names,
        title=window.title,
    )


def _hyprland_lost(target: FocusTarget) -> str | None:
    window = hyprland.active_window(target.env)
    if window is not None and window.address == target.ident:
        return None
    if target.ident not in hyprland.window_addresses(target.env):
        return f"{target.description} was closed"
    if window is None:
        return f"{target.description} lost the focus"
    other = _describe(window.title, window.address)
    return f"the focus moved from {target.description} to {other}"
