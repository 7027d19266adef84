"""Pick the text output for this desktop, or check the one the user chose.

This is where backends are put together: ydotool gets the clipboard (pasting with
ydotool's keys) for the text it cannot type, so neither module imports the other.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from voxtray.choices import OutputMethod, PasteChord
from voxtray.desktop.session import DesktopSession, DisplayServer
from voxtray.errors import ExitCode
from voxtray.output.atspi import AtspiOutput
from voxtray.output.base import DeliveryError, OutputBase, TextOutput
from voxtray.output.clipboard import ClipboardOutput
from voxtray.output.copy_only import CopyOnlyOutput
from voxtray.output.keyboard_typer import KeyboardOutput
from voxtray.output.portal_keys import PortalKeysOutput
from voxtray.output.pynput_typer import PynputOutput
from voxtray.output.typeorpaste import TypeOrPaste
from voxtray.output.wtype import WtypeOutput, unsupported_desktop
from voxtray.output.xdotool import XdotoolOutput
from voxtray.output.ydotool import YdotoolOutput

OUTPUT_CHOICES = tuple(OutputMethod.values())
"""Deprecated: use `voxtray.choices.OutputMethod`; kept while the settings dialog imports it."""

_BACKENDS: dict[OutputMethod, Callable[[Mapping[str, str], str], OutputBase]] = {
    OutputMethod.XDOTOOL: XdotoolOutput,
    OutputMethod.PYNPUT: PynputOutput,
    OutputMethod.KEYBOARD: KeyboardOutput,
    OutputMethod.WTYPE: WtypeOutput,
    OutputMethod.YDOTOOL: lambda env, platform: YdotoolOutput(
        env, platform, non_ascii=ClipboardOutput(env, platform, paste_keys=OutputMethod.YDOTOOL)
    ),
    OutputMethod.CLIPBOARD: ClipboardOutput,
    OutputMethod.ATSPI: lambda env, platform: AtspiOutput(
        env, platform, fallback=_copy_only(env, platform)
    ),
    OutputMethod.PORTAL: PortalKeysOutput,
}

_AUTO_ORDER = {
    DisplayServer.WAYLAND: (OutputMethod.WTYPE, OutputMethod.YDOTOOL, OutputMethod.CLIPBOARD),
    DisplayServer.X11: (OutputMethod.XDOTOOL, OutputMethod.PYNPUT, OutputMethod.CLIPBOARD),
    DisplayServer.WINDOWS: (OutputMethod.KEYBOARD, OutputMethod.PYNPUT),
    DisplayServer.MACOS: (OutputMethod.PYNPUT,),
    DisplayServer.NONE: (),
}


def auto_order(session: DesktopSession) -> tuple[OutputMethod, ...]:
    """The backends "auto" tries on this session, best first."""
    return _AUTO_ORDER[session.server]


def create_output(
    name: OutputMethod | str, env: Mapping[str, str] | None = None, *, platform: str | None = None
) -> TextOutput:
    """A backend by name, whether or not it can work here.

    Raises:
        DeliveryError: ``name`` is not a backend (exit code USAGE).
    """
    factory = _BACKENDS.get(OutputMethod(name)) if name in OutputMethod.values() else None
    if factory is None:
        choices = ", ".join(OutputMethod.values())
        raise DeliveryError(f"unknown output {name!r}: choose one of {choices}", ExitCode.USAGE)
    return factory(_env(env), platform or sys.platform)


def choose_output(
    preferred: OutputMethod | str = OutputMethod.AUTO,
    env: Mapping[str, str] | None = None,
    *,
    platform: str | None = None,
) -> TextOutput:
    """The output to type with.

    Args:
        preferred: An `OutputMethod` (or its value); AUTO takes the first available of
            the session's order (Wayland: wtype, ydotool, clipboard; X11: xdotool, pynput,
            clipboard; Windows: keyboard, pynput; macOS: pynput); on GNOME and KDE
            Wayland, where none of those types, insertion over the accessibility bus, and
            without it the clipboard with a "press Ctrl+V" line.
        env: The environment to judge (``os.environ`` if None).
        platform: ``sys.platform`` if None.

    Raises:
        DeliveryError: The chosen backend cannot work here, or with AUTO none can; the
            message names what is missing and how to install or start it.
    """
    platform = platform or sys.platform
    environment = _env(env)
    if preferred != OutputMethod.AUTO:
        output = create_output(preferred, environment, platform=platform)
        reason = output.problem()
        if reason is not None:
            raise DeliveryError(reason)
        return output
    session = DesktopSession.from_env(environment, platform)
    reasons = []
    if session.wayland and unsupported_desktop(session):
        # GNOME and KDE lend a keyboard through the portal: no daemon, no group, one consent.
        portal = PortalKeysOutput(environment, platform)
        if (reason := portal.problem()) is None:
            return portal
        reasons.append(reason)
    for name in auto_order(session):
        output = create_output(name, environment, platform=platform)
        reason = output.problem()
        if reason is None:
            return _fastest(output, environment, platform)
        reasons.append(reason)
    copy_only = _copy_only(environment, platform)
    if session.wayland and unsupported_desktop(session):
        inserter = AtspiOutput(environment, platform, fallback=copy_only)
        if inserter.available():
            return inserter
        reasons.append(inserter.problem() or "")
    if copy_only is not None:
        return copy_only
    if session.server is DisplayServer.NONE:
        raise DeliveryError("no X11 or Wayland session: neither DISPLAY nor WAYLAND_DISPLAY is set")
    raise DeliveryError(f"nothing can type on this {session.server} desktop: " + "; ".join(reasons))


def paste_with(output: TextOutput, chord: PasteChord) -> bool:
    """Have ``output`` paste with ``chord`` from now on; False when it never pastes."""
    part: TextOutput | None = output
    if isinstance(output, TypeOrPaste | PortalKeysOutput):
        part = output.paster
    elif isinstance(output, YdotoolOutput):
        part = output.non_ascii
    if not isinstance(part, ClipboardOutput):
        return False
    part.paste_chord = chord
    return True


def _copy_only(env: Mapping[str, str], platform: str) -> CopyOnlyOutput | None:
    """The clipboard with a "press Ctrl+V" line, where wl-copy can set it."""
    output = CopyOnlyOutput(env, platform)
    return output if output.session.wayland and output.available() else None


def _fastest(output: TextOutput, env: Mapping[str, str], platform: str) -> TextOutput:
    """wtype with a paste for text that would take longer to type than to paste."""
    if output.name is not OutputMethod.WTYPE:
        return output
    paster = ClipboardOutput(env, platform, paste_keys=OutputMethod.WTYPE)
    return TypeOrPaste(output, paster) if paster.available() else output


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    return dict(os.environ if env is None else env)
