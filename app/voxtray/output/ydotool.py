"""Type through ydotool (a /dev/uinput keyboard), for Wayland desktops without wtype.

ydotool sends US-layout key codes, so it types ASCII only (its 1.x release reads anything
else out of bounds); text with other characters goes to the ``non_ascii`` output the
chooser gives it (the clipboard, pasting with ydotool's keys) and is refused without one.
Two generations are in use: 0.1.x (Debian 12, no daemon, needs /dev/uinput) and 1.x
(talks to ``ydotoold`` over a socket); the presence of ``ydotoold`` tells them apart.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from voxtray.choices import OutputMethod, PasteChord
from voxtray.output.base import (
    CHORD_NAMES,
    Delivery,
    DeliveryError,
    FocusTarget,
    OutputBase,
    TextOutput,
    check_key,
    run_tool,
    typing_timeout,
)

# 1.x waits 20 ms after each key down and 20 ms after each release by default, 40 ms a
# character (2.2 s for 54); 2 ms each keeps keys distinct for the compositor.
_KEY_DELAY_MS = 2
_KEY_HOLD_MS = 2
# Linux input event codes for the paste chords.
_CHORD_CODES = {
    PasteChord.CTRL_V: (29, 47),  # KEY_LEFTCTRL, KEY_V
    PasteChord.CTRL_SHIFT_V: (29, 42, 47),  # KEY_LEFTSHIFT is 42
    PasteChord.SHIFT_INSERT: (42, 110),  # KEY_INSERT
}
# Linux input event codes (1.x) and key names (0.1.x) for the keys `press_key` takes.
_KEY_CODES = {"BackSpace": 14, "Return": 28, "Tab": 15, "Escape": 1, "Delete": 111}
_KEY_NAMES = {
    "BackSpace": "BackSpace",
    "Return": "Return",
    "Tab": "Tab",
    "Escape": "Escape",
    "Delete": "Delete",
}


class YdotoolOutput(OutputBase):
    """``ydotool type --file -`` at 2 ms per key.

    Args:
        env: The environment to judge and to run ydotool in; os.environ if None.
        platform: ``sys.platform`` if None.
        non_ascii: What delivers text with characters other than ASCII (the clipboard);
            None refuses such text.
    """

    name = OutputMethod.YDOTOOL

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        platform: str | None = None,
        non_ascii: TextOutput | None = None,
    ) -> None:
        super().__init__(env, platform)
        self.non_ascii = non_ascii

    def problem(self) -> str | None:
        if not self.session.wayland_display:
            return "ydotool is used on Wayland only (WAYLAND_DISPLAY is not set)"
        if self._which("ydotool") is None:
            return "ydotool not found: sudo apt-get install ydotool"
        if self.daemon_version():
            if not any(path.exists() for path in self.socket_paths()):
                return "ydotoold is not running: start it (systemctl --user enable --now ydotool)"
        elif not os.access("/dev/uinput", os.W_OK):
            return "ydotool cannot write /dev/uinput: add yourself to the input group"
        return None

    def _which(self, tool: str) -> str | None:
        return shutil.which(tool, path=self.env.get("PATH"))

    def daemon_version(self) -> bool:
        """Whether this is ydotool 1.x, which sends every event through ydotoold."""
        return self._which("ydotoold") is not None

    def socket_paths(self) -> list[Path]:
        """Where ydotool 1.x looks for the daemon's socket (newer and older releases)."""
        if self.env.get("YDOTOOL_SOCKET"):
            return [Path(self.env["YDOTOOL_SOCKET"])]
        # Where ydotool itself looks (1.0.x before XDG_RUNTIME_DIR), not a file we create.
        paths = [Path("/tmp/.ydotool_socket")]  # noqa: S108
        if self.env.get("XDG_RUNTIME_DIR"):
            paths.insert(0, Path(self.env["XDG_RUNTIME_DIR"]) / ".ydotool_socket")
        return paths

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        if not text.isascii():
            return self._paste_instead(text, target)
        return self.type_chunks(text, target, self._type)

    def _type(self, text: str) -> None:
        args = ["ydotool", "type", "--key-delay", str(_KEY_DELAY_MS)]
        if self.daemon_version():
            args += ["--key-hold", str(_KEY_HOLD_MS)]
        # From stdin: no escape processing (1.x turns "\n" typed as text into a newline)
        # and no text on the command line.
        run_tool(
            [*args, "--file", "-"],
            env=self.tool_env(),
            timeout=typing_timeout(text, 0.05),
            stdin=text.encode("utf-8"),
        )

    def _paste_instead(self, text: str, target: FocusTarget) -> Delivery:
        if self.non_ascii is None:
            raise DeliveryError("ydotool types ASCII only: choose the clipboard output")
        reason = self.non_ascii.problem()
        if reason is not None:
            raise DeliveryError(f"ydotool types ASCII only, and the clipboard fails too: {reason}")
        return self.non_ascii.deliver(text, target)

    def press_paste(self, chord: PasteChord = PasteChord.CTRL_V) -> None:
        """Press ``chord``."""
        run_tool(self.paste_args(chord), env=self.tool_env(), timeout=5)

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times."""
        check_key(name, count)
        self._require()
        run_tool(
            self.key_args(name, count), env=self.tool_env(), timeout=typing_timeout("x" * count)
        )

    def key_args(self, name: str, count: int) -> list[str]:
        """The command that presses ``name`` ``count`` times, for the daemon's version."""
        if self.daemon_version():
            code = _KEY_CODES[name]
            delay = ["--key-delay", str(_KEY_DELAY_MS)]
            return [
                "ydotool",
                "key",
                *delay,
                *[f"{code}:{s}" for _ in range(count) for s in (1, 0)],
            ]
        return ["ydotool", "key", *[_KEY_NAMES[name]] * count]

    def paste_args(self, chord: PasteChord = PasteChord.CTRL_V) -> list[str]:
        """The command that presses ``chord``: key codes for 1.x, key names for 0.1.x."""
        if self.daemon_version():
            codes = _CHORD_CODES[chord]
            presses = [f"{code}:1" for code in codes]
            releases = [f"{code}:0" for code in reversed(codes)]
            return ["ydotool", "key", *presses, *releases]
        return ["ydotool", "key", CHORD_NAMES[chord]]
