"""Pick the text output for this desktop, or check the one the user chose."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from app.errors import ExitCode
from app.output.base import DeliveryError, OutputBase, TextOutput, is_wayland
from app.output.clipboard import ClipboardOutput
from app.output.keyboard_typer import KeyboardOutput
from app.output.pynput_typer import PynputOutput
from app.output.wtype import WtypeOutput
from app.output.xdotool import XdotoolOutput
from app.output.ydotool import YdotoolOutput

OUTPUT_CHOICES = ("auto", "xdotool", "pynput", "keyboard", "wtype", "ydotool", "clipboard")
"""The values the output setting accepts, in the order the settings UI lists them."""

_BACKENDS: dict[str, Callable[[Mapping[str, str], str], OutputBase]] = {
    "xdotool": XdotoolOutput,
    "pynput": PynputOutput,
    "keyboard": KeyboardOutput,
    "wtype": WtypeOutput,
    "ydotool": YdotoolOutput,
    "clipboard": ClipboardOutput,
}

_AUTO_ORDER = {
    "wayland": ("wtype", "ydotool", "clipboard"),
    "x11": ("xdotool", "pynput", "clipboard"),
    "windows": ("keyboard", "pynput"),
    "macos": ("pynput",),
    "none": (),
}


def session_kind(env: Mapping[str, str], platform: str) -> str:
    """ "wayland", "x11", "windows", "macos", or "none" (no graphical session found)."""
    if platform == "win32":
        return "windows"
    if platform == "darwin":
        return "macos"
    if is_wayland(env):
        return "wayland"
    if env.get("DISPLAY"):
        return "x11"
    return "none"


def auto_order(env: Mapping[str, str], platform: str) -> tuple[str, ...]:
    """The backends "auto" tries, best first."""
    return _AUTO_ORDER[session_kind(env, platform)]


def create_output(
    name: str, env: Mapping[str, str] | None = None, *, platform: str | None = None
) -> TextOutput:
    """A backend by name, whether or not it can work here.

    Raises:
        DeliveryError: ``name`` is not a backend (exit code USAGE).
    """
    factory = _BACKENDS.get(name)
    if factory is None:
        choices = ", ".join(OUTPUT_CHOICES)
        raise DeliveryError(f"unknown output {name!r}: choose one of {choices}", ExitCode.USAGE)
    return factory(_env(env), platform or sys.platform)


def choose_output(
    preferred: str = "auto",
    env: Mapping[str, str] | None = None,
    *,
    platform: str | None = None,
) -> TextOutput:
    """The output to type with.

    Args:
        preferred: A name from ``OUTPUT_CHOICES``; "auto" takes the first available of
            the session's order (Wayland: wtype, ydotool, clipboard; X11: xdotool, pynput,
            clipboard; Windows: keyboard, pynput; macOS: pynput).
        env: The environment to judge (``os.environ`` if None).
        platform: ``sys.platform`` if None.

    Raises:
        DeliveryError: The chosen backend cannot work here, or with "auto" none can; the
            message names what is missing and how to install or start it.
    """
    platform = platform or sys.platform
    environment = _env(env)
    if preferred != "auto":
        output = create_output(preferred, environment, platform=platform)
        reason = output.problem()
        if reason is not None:
            raise DeliveryError(reason)
        return output
    reasons = []
    for name in auto_order(environment, platform):
        output = create_output(name, environment, platform=platform)
        reason = output.problem()
        if reason is None:
            return output
        reasons.append(reason)
    kind = session_kind(environment, platform)
    if kind == "none":
        raise DeliveryError("no X11 or Wayland session: neither DISPLAY nor WAYLAND_DISPLAY is set")
    raise DeliveryError(f"nothing can type on this {kind} desktop: " + "; ".join(reasons))


def describe_outputs(
    env: Mapping[str, str] | None = None, *, platform: str | None = None
) -> list[tuple[str, bool, str]]:
    """Every backend with whether it works here and why not, for the diagnostics page.

    Returns:
        ``(name, available, reason)`` in ``OUTPUT_CHOICES`` order, reason "ready" when
        available.
    """
    environment = _env(env)
    rows = []
    for name in OUTPUT_CHOICES[1:]:
        reason = create_output(name, environment, platform=platform).problem()
        rows.append((name, reason is None, reason or "ready"))
    return rows


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    return dict(os.environ if env is None else env)
