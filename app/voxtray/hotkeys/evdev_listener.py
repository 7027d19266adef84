"""Global hotkeys from the kernel's input devices (/dev/input/event*), through `evdev`.

Works on every Linux desktop, Wayland included, with no compositor binding: the keys are
read below the compositor. Reading needs membership of the `input` group (the devices are
`root:input 0660`), which is also what lets a program see every key typed: the user opts
in by choosing this backend and joining the group. Keys are only read, never grabbed, so
other programs still get them.
"""

from __future__ import annotations

import glob
import logging
import os
import selectors
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from voxtray.choices import HotkeyBackend
from voxtray.errors import ExitCode, VoxtrayError, first_line
from voxtray.hotkeys.base import Callback, ComboTracker, ListenerBase
from voxtray.hotkeys.keys import Hotkey

log = logging.getLogger(__name__)

DEVICES = "/dev/input/event*"
EV_KEY = 1
KEY_UP, KEY_DOWN, KEY_REPEAT = 0, 1, 2
GROUP_ADVICE = "add yourself to the input group (sudo usermod -aG input $USER) and log in again"

# linux/input-event-codes.h: a stable kernel ABI.
_ROWS = {16: "qwertyuiop", 30: "asdfghjkl", 44: "zxcvbnm"}
_NAMED = {
    1: "esc", 12: "minus", 13: "equal", 14: "backspace", 15: "tab", 26: "bracket_left",
    27: "bracket_right", 28: "enter", 29: "left_ctrl", 39: "semicolon", 40: "apostrophe",
    41: "grave", 42: "left_shift", 43: "backslash", 51: "comma", 52: "period", 53: "slash",
    54: "right_shift", 56: "left_alt", 57: "space", 58: "caps_lock", 69: "num_lock",
    70: "scroll_lock", 87: "f11", 88: "f12", 97: "right_ctrl", 99: "print_screen",
    100: "right_alt", 102: "home", 103: "up", 104: "page_up", 105: "left", 106: "right",
    107: "end", 108: "down", 109: "page_down", 110: "insert", 111: "delete", 119: "pause",
    125: "left_super", 126: "right_super", 127: "menu",
}  # fmt: skip


def _key_names() -> dict[int, str]:
    names = dict(_NAMED)
    names |= {2 + i: str((i + 1) % 10) for i in range(10)}  # KEY_1 = 2 ... KEY_0 = 11
    for first, letters in _ROWS.items():
        names |= {first + i: letter for i, letter in enumerate(letters)}
    names |= {59 + i: f"f{i + 1}" for i in range(10)}  # F1-F10
    names |= {183 + i: f"f{i + 13}" for i in range(12)}  # F13-F24
    return names


KEY_NAMES = _key_names()
"""Kernel key code -> the key name hotkeys use (``ctrl+alt+space`` and so on)."""


def feed(tracker: ComboTracker, events: Iterable[tuple[int, int, int]]) -> None:
    """Pass (type, code, value) input events to a combination tracker.

    Auto-repeat (value 2) counts as a key-down, which the tracker ignores while the
    combination is held; events that are not keys (sync, scan codes) are skipped.
    """
    for kind, code, value in events:
        if kind != EV_KEY:
            continue
        name = KEY_NAMES.get(code)
        if value == KEY_UP:
            tracker.key_up(name)
        elif value in (KEY_DOWN, KEY_REPEAT):
            tracker.key_down(name)


def probe(paths: Sequence[str] | None, platform: str) -> tuple[bool, str, list[str]]:
    """Whether evdev can see keys here, why not, and the readable keyboard devices."""
    if not platform.startswith("linux"):
        return False, "evdev hotkeys exist on Linux only", []
    try:
        import evdev
    except ImportError as exc:
        return False, f"the evdev package cannot be used: {first_line(exc)}", []
    devices = sorted(glob.glob(DEVICES)) if paths is None else list(paths)
    if not devices:
        return False, "no /dev/input/event* devices (no local keyboard to read)", []
    readable = [path for path in devices if os.access(path, os.R_OK)]
    if not readable:
        return False, f"cannot read /dev/input/event*: {GROUP_ADVICE}", []
    keyboards = [path for path in readable if _is_keyboard(evdev, path)]
    if not keyboards:
        return False, "none of the readable /dev/input devices is a keyboard", []
    return True, f"reads {len(keyboards)} keyboard device(s) in /dev/input", keyboards


def _is_keyboard(evdev: Any, path: str) -> bool:
    try:
        device = evdev.InputDevice(path)
    except OSError:
        return False
    try:
        keys = device.capabilities().get(EV_KEY, [])
        return 57 in keys and 30 in keys  # space and a
    finally:
        device.close()


class EvdevBackend(ListenerBase):
    """Reads every keyboard under /dev/input on a thread of its own.

    Args:
        env: The environment to judge; `os.environ` if None.
        platform: `sys.platform` if None.
        paths: The device files to consider; every /dev/input/event* if None.
    """

    name = HotkeyBackend.EVDEV

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        platform: str | None = None,
        paths: Sequence[str] | None = None,
    ) -> None:
        super().__init__(env, platform)
        self._paths = paths
        self._thread: threading.Thread | None = None
        self._wake: tuple[int, int] | None = None
        self._tracker: ComboTracker | None = None

    def available(self) -> tuple[bool, str]:
        """Whether the devices can be read here, and why not (never raises)."""
        try:
            ok, why, _ = probe(self._paths, self.platform)
        except Exception as exc:
            return False, f"evdev failed: {first_line(exc)}"
        return ok, why

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Listen for ``hotkey`` on every keyboard (see ``HotkeyBackend.start``).

        Raises:
            VoxtrayError: No keyboard can be read; the message says what to do.
        """
        self.stop()
        ok, why, keyboards = probe(self._paths, self.platform)
        if not ok:
            raise VoxtrayError(f"evdev hotkeys unavailable: {why}", ExitCode.USAGE)
        import evdev

        devices = [evdev.InputDevice(path) for path in keyboards]
        self._tracker = ComboTracker(hotkey, on_press, on_release)
        self._wake = os.pipe()
        self._thread = threading.Thread(
            target=self._listen, args=(devices, self._tracker, self._wake[0]),
            name="voxtray-evdev", daemon=True,
        )  # fmt: skip
        self._thread.start()

    @staticmethod
    def _listen(devices: list[Any], tracker: ComboTracker, wake: int) -> None:
        selector = selectors.DefaultSelector()
        selector.register(wake, selectors.EVENT_READ)
        for device in devices:
            selector.register(device.fd, selectors.EVENT_READ, device)
        try:
            while True:
                for key, _ in selector.select():
                    if key.data is None:
                        return
                    try:
                        events = [(e.type, e.code, e.value) for e in key.data.read()]
                    except OSError:  # unplugged
                        selector.unregister(key.fd)
                        continue
                    feed(tracker, events)
        finally:
            selector.close()
            for device in devices:
                device.close()

    def stop(self) -> None:
        """Stop reading; no callback runs after this returns."""
        thread, wake, tracker = self._thread, self._wake, self._tracker
        self._thread = self._wake = self._tracker = None
        if tracker is not None:
            tracker.close()
        if wake is not None:
            os.write(wake[1], b"x")
        if thread is not None:
            thread.join(timeout=5)
        if wake is not None:
            os.close(wake[0])
            os.close(wake[1])
