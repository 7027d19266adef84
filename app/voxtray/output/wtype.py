"""Type through wtype on Wayland compositors with the virtual-keyboard protocol (wlroots).

wtype uploads a keymap holding exactly the characters it types, so any Unicode text works.
Keys and chords (paste, BackSpace, Return) go through `voxtray.desktop.virtual_keyboard`
instead, on the keycodes of the user's own keymap: GTK 3 ignores them under wtype's. GNOME
and KDE do not offer the protocol (wtype reports "Compositor does not support the virtual
keyboard protocol"), so there it is reported unavailable up front.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence

from voxtray.choices import OutputMethod, PasteChord
from voxtray.desktop import virtual_keyboard
from voxtray.desktop.session import Desktop, DesktopSession
from voxtray.output.base import (
    Delivery,
    DeliveryError,
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


log = logging.getLogger(__name__)

CHORD_KEYS = {
    PasteChord.CTRL_V: ("ctrl", "v"),
    PasteChord.CTRL_SHIFT_V: ("ctrl", "shift", "v"),
    PasteChord.SHIFT_INSERT: ("shift", "Insert"),
}
"""Each paste chord as `virtual_keyboard.press` takes it: modifiers, then the key."""


def wtype_args(keys: Sequence[str], count: int = 1) -> list[str]:
    """wtype's arguments pressing the chord ``keys`` ``count`` times."""
    *held, last = keys
    down = [arg for name in held for arg in ("-M", name)]
    up = [arg for name in reversed(held) for arg in ("-m", name)]
    return [*down, *[arg for _ in range(count) for arg in ("-k", last)], *up]


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
        self._press(CHORD_KEYS[chord])

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times."""
        check_key(name, count)
        self._require()
        self._press((name,), count)

    def _press(self, keys: Sequence[str], count: int = 1) -> None:
        """Through a virtual keyboard with the user's keymap; with wtype where the
        compositor or libxkbcommon cannot give one (GTK 3 then ignores the keys)."""
        try:
            virtual_keyboard.press(self.tool_env(), keys, count)
            return
        except virtual_keyboard.KeysSentError as exc:
            raise DeliveryError(str(exc)) from exc  # pressed again, they could repeat
        except virtual_keyboard.KeyboardError as exc:
            log.info("keys through wtype's own keymap: %s", exc)
        timeout = typing_timeout("x" * count, 0.02)
        run_tool(["wtype", *wtype_args(keys, count)], env=self.tool_env(), timeout=timeout)
