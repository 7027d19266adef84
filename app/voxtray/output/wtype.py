"""Type through wtype on Wayland compositors with the virtual-keyboard protocol (wlroots).

wtype uploads a keymap holding exactly the characters it types, so any Unicode text works.
GNOME and KDE do not offer the protocol (wtype reports "Compositor does not support the
virtual keyboard protocol"), so there it is reported unavailable up front.
"""

from __future__ import annotations

import shutil

from voxtray.choices import OutputMethod, PasteChord
from voxtray.desktop.session import Desktop, DesktopSession
from voxtray.output.base import (
    Delivery,
    FocusTarget,
    OutputBase,
    check_key,
    run_tool,
    typing_timeout,
)

_NO_VIRTUAL_KEYBOARD = (Desktop.GNOME, Desktop.KDE)


def unsupported_desktop(session: DesktopSession) -> str | None:
    """The desktop's name when its compositor lacks the virtual-keyboard protocol."""
    for desktop in _NO_VIRTUAL_KEYBOARD:
        if desktop in session.desktops:
            return desktop.upper()
    return None


_WTYPE_CHORDS = {
    PasteChord.CTRL_V: ("-M", "ctrl", "-k", "v", "-m", "ctrl"),
    PasteChord.CTRL_SHIFT_V: ("-M", "ctrl", "-M", "shift", "-k", "v", "-m", "shift", "-m", "ctrl"),
    PasteChord.SHIFT_INSERT: ("-M", "shift", "-k", "Insert", "-m", "shift"),
}


class WtypeOutput(OutputBase):
    """``wtype -`` with the text on standard input."""

    name = OutputMethod.WTYPE

    def problem(self) -> str | None:
        if not self.session.wayland_display:
            return "wtype needs a Wayland session (WAYLAND_DISPLAY is not set)"
        if shutil.which("wtype", path=self.env.get("PATH")) is None:
            return "wtype not found: sudo apt-get install wtype"
        desktop = unsupported_desktop(self.session)
        if desktop:
            return (
                f"{desktop}'s compositor lacks the virtual-keyboard protocol wtype needs: "
                "use ydotool"
            )
        return None

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        return self.type_chunks(text, target, self._type)

    def _type(self, text: str) -> None:
        # Stdin, not the command line, which every local user can read. A virtual keyboard
        # has modifiers of its own, so keys the user still holds do not reach its text.
        run_tool(
            ["wtype", "-"],
            env=self.tool_env(),
            timeout=typing_timeout(text, 0.02),
            stdin=text.encode("utf-8"),
        )

    def press_paste(self, chord: PasteChord = PasteChord.CTRL_V) -> None:
        """Press ``chord``."""
        run_tool(["wtype", *_WTYPE_CHORDS[chord]], env=self.tool_env(), timeout=5)

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times."""
        check_key(name, count)
        self._require()
        keys = [arg for _ in range(count) for arg in ("-k", name)]
        run_tool(["wtype", *keys], env=self.tool_env(), timeout=typing_timeout("x" * count, 0.02))
