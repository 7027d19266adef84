"""Type through xdotool on X11 (XTEST key events, which every X application accepts)."""

from __future__ import annotations

import logging
import shutil

from app.choices import OutputMethod
from app.desktop import xlib
from app.output import binder, modifiers
from app.output.base import OutputBase, run_tool, typing_timeout

log = logging.getLogger(__name__)

# xdotool's own per-key delay, enough for it to bind and unbind each character in turn
# when the spare keycodes ran out (see binder); at 0 ms such characters come out wrong.
_FALLBACK_DELAY_MS = 12


class XdotoolOutput(OutputBase):
    """``xdotool type --clearmodifiers --delay 0``, non-ASCII bound beforehand."""

    name = OutputMethod.XDOTOOL

    def problem(self) -> str | None:
        if not self.session.x11_display:
            return "xdotool needs an X11 session (DISPLAY is not set)"
        if shutil.which("xdotool", path=self.env.get("PATH")) is None:
            return "xdotool not found: sudo apt-get install xdotool"
        return None

    def deliver(self, text: str) -> None:
        if not text:
            return
        self._require()
        # xdotool finds no key for "\n" (Linefeed) but types "\r" as Return.
        text = text.replace("\r\n", "\n").replace("\n", "\r")
        try:
            display = xlib.XDisplay(self.session.x11_display)
        except OSError as exc:
            log.debug("typing without keymap preparation: %s", exc)
            self._type(text, bound=text.isascii())
            return
        with display:
            modifiers.wait_until_released(modifiers.x11_probe(display))
            # Still-held modifiers are released and restored by --clearmodifiers.
            with binder.binder_for(self.session.x11_display).session(display) as session:
                present = {xlib.keysym_char(sym) for sym in session.foreign_keysyms(2)}
                keys = [
                    None if char in present or xlib.is_control(char) else xlib.char_keysym(char)
                    for char in text
                ]
                for segment in session.segments(keys):
                    self._type(text[segment.start : segment.end], bound=segment.bound)

    def _type(self, text: str, bound: bool) -> None:
        delay = 0 if bound else _FALLBACK_DELAY_MS
        # The text goes through stdin: a command line is readable by every local user.
        args = ["xdotool", "type", "--clearmodifiers", "--delay", str(delay), "--file", "-"]
        per_char = 0.01 + delay / 1000
        run_tool(
            args,
            env=self.tool_env(),
            timeout=typing_timeout(text, per_char),
            stdin=text.encode("utf-8"),
        )

    def press_paste(self) -> None:
        """Press ctrl+v once the user's modifiers are up (or lifted, after the wait)."""
        self._require()
        try:
            with xlib.XDisplay(self.session.x11_display) as display:
                modifiers.wait_until_released(modifiers.x11_probe(display))
        except OSError as exc:
            log.debug("pasting without waiting for modifiers: %s", exc)
        run_tool(["xdotool", "key", "--clearmodifiers", "ctrl+v"], env=self.tool_env(), timeout=5)
