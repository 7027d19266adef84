"""Global hotkeys through the `keyboard` package: Windows, and Linux as root.

On Linux the package reads /dev/input, the only way to see keys on Wayland, and needs root.
"""

from __future__ import annotations

import glob
import logging
import os
import warnings
from collections.abc import Mapping
from typing import Any

from voxtray.choices import HotkeyBackend
from voxtray.desktop.session import DisplayServer
from voxtray.errors import ExitCode, VoxtrayError, first_line
from voxtray.hotkeys.base import Callback, ComboTracker, ListenerBase, import_untyped
from voxtray.hotkeys.keys import PLAIN_KEYS, Hotkey, char_name

log = logging.getLogger(__name__)

_KEYBOARD_NAMES = {
    "ctrl": "left_ctrl", "left ctrl": "left_ctrl", "right ctrl": "right_ctrl",
    "alt": "left_alt", "left alt": "left_alt", "right alt": "right_alt", "alt gr": "right_alt",
    "shift": "left_shift", "left shift": "left_shift", "right shift": "right_shift",
    "windows": "left_super", "left windows": "left_super", "right windows": "right_super",
    "page up": "page_up", "page down": "page_down", "caps lock": "caps_lock",
    "num lock": "num_lock", "scroll lock": "scroll_lock", "print screen": "print_screen",
}  # fmt: skip


def _keyboard_name(name: str | None) -> str | None:
    if not name:
        return None
    lower = name.lower()
    if lower in _KEYBOARD_NAMES:
        return _KEYBOARD_NAMES[lower]
    if lower in PLAIN_KEYS:
        return lower
    return char_name(name)


class KeyboardBackend(ListenerBase):
    """Global hotkeys through the `keyboard` package: Windows, or Linux as root."""

    name = HotkeyBackend.KEYBOARD

    def __init__(self, env: Mapping[str, str] | None = None, platform: str | None = None) -> None:
        super().__init__(env, platform)
        self._hook: Any = None
        self._tracker: ComboTracker | None = None

    def available(self) -> tuple[bool, str]:
        """Whether the keyboard package can see keys here, and why (never raises)."""
        try:
            return self._probe()
        except Exception as exc:
            return False, f"keyboard failed: {first_line(exc)}"

    def _probe(self) -> tuple[bool, str]:
        try:
            import_untyped("keyboard")
        except ImportError as exc:
            return False, f"the keyboard package cannot be used: {first_line(exc)}"
        if self.session.server is DisplayServer.WINDOWS:
            return True, "Windows keyboard hook"
        if self.session.server is DisplayServer.MACOS:
            return False, "the keyboard package needs root on macOS; use pynput"
        if os.geteuid() != 0:
            return False, "the keyboard package reads /dev/input and needs root on Linux"
        devices = glob.glob("/dev/input/event*")
        if not devices:
            return False, "no /dev/input/event* devices to read keys from"
        if not any(os.access(path, os.R_OK) for path in devices):
            return False, "the /dev/input/event* devices cannot be read"
        return True, f"reads {len(devices)} /dev/input devices"

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Hook the keyboard for `hotkey` (see `HotkeyBackend.start`).

        Raises:
            VoxtrayError: The keyboard package is unavailable here or its hook failed.
        """
        self.stop()
        ok, why = self.available()
        if not ok:
            raise VoxtrayError(f"keyboard hotkeys unavailable: {why}", ExitCode.USAGE)
        keyboard = import_untyped("keyboard")
        tracker = ComboTracker(hotkey, on_press, on_release)

        def on_event(event: Any) -> None:
            name = _keyboard_name(getattr(event, "name", None))
            if event.event_type == "down":
                tracker.key_down(name)
            else:
                tracker.key_up(name)

        try:
            with warnings.catch_warnings():
                # Its warning about uinput concerns sending keys, which we never do.
                warnings.simplefilter("ignore")
                self._hook = keyboard.hook(on_event)
        except Exception as exc:
            raise VoxtrayError(
                f"the keyboard package could not hook the keyboard: {first_line(exc)}",
                ExitCode.USAGE,
            ) from exc
        self._tracker = tracker

    def stop(self) -> None:
        """Remove the hook, if any; no callback runs after this returns."""
        hook, tracker = self._hook, self._tracker
        self._hook = self._tracker = None
        if tracker is not None:
            tracker.close()
        if hook is not None:
            try:
                import_untyped("keyboard").unhook(hook)
            except Exception:
                log.exception("keyboard unhook failed")
