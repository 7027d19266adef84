"""Wait for the user's modifier keys to come up before typing.

The dictation hotkey is often a chord (ctrl+alt+space): typing while ctrl is still down
turns the words into shortcuts (ctrl+a, ctrl+w). Each platform is asked for the keys that
are down right now: X11 through XQueryKeymap (see ``xlib``), Windows through
GetAsyncKeyState, macOS through CGEventSourceFlagsState.
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable

from voxtray.desktop import xlib

MODIFIER_WAIT_S = 1.0
"""How long typing waits for held modifiers to be released."""

_POLL_S = 0.01

HeldProbe = Callable[[], frozenset[str]]


def wait_until_released(probe: HeldProbe, timeout: float = MODIFIER_WAIT_S) -> frozenset[str]:
    """Poll ``probe`` until no modifier is held or ``timeout`` passes.

    Returns:
        The modifiers still held when it gave up; empty when all were released.
    """
    deadline = time.monotonic() + timeout
    while True:
        held = probe()
        if not held or time.monotonic() >= deadline:
            return held
        time.sleep(_POLL_S)


def x11_probe(display: xlib.XDisplay) -> HeldProbe:
    """A probe for the modifiers held on an X display."""
    names = xlib.modifier_keycodes(display.keymap())

    def probe() -> frozenset[str]:
        return frozenset(names[code] for code in display.pressed_keycodes() if code in names)

    return probe


def _windows_held() -> frozenset[str]:
    if sys.platform != "win32":
        return frozenset()
    user32 = ctypes.WinDLL("user32")
    keys = {0x10: "shift", 0x11: "ctrl", 0x12: "alt", 0x5B: "super", 0x5C: "super"}
    return frozenset(name for vk, name in keys.items() if user32.GetAsyncKeyState(vk) & 0x8000)


_APPLICATION_SERVICES = (
    "/System/Library/Frameworks/ApplicationServices.framework/ApplicationServices"
)


def _macos_held() -> frozenset[str]:
    if sys.platform != "darwin":
        return frozenset()
    services = ctypes.CDLL(_APPLICATION_SERVICES)
    services.CGEventSourceFlagsState.argtypes = [ctypes.c_int32]
    services.CGEventSourceFlagsState.restype = ctypes.c_uint64
    hid_system_state = 1
    flags = int(services.CGEventSourceFlagsState(hid_system_state))
    masks = {0x20000: "shift", 0x40000: "ctrl", 0x80000: "alt", 0x100000: "super"}
    return frozenset(name for mask, name in masks.items() if flags & mask)


def macos_trusted() -> bool:
    """Whether macOS lets this process send key events (System Settings > Accessibility)."""
    if sys.platform != "darwin":
        return True
    services = ctypes.CDLL(_APPLICATION_SERVICES)
    services.AXIsProcessTrusted.restype = ctypes.c_bool
    return bool(services.AXIsProcessTrusted())


def system_probe(platform: str) -> HeldProbe | None:
    """The probe for Windows or macOS; None elsewhere (X11 needs a display, see x11_probe)."""
    if platform == "win32":
        return _windows_held
    if platform == "darwin":
        return _macos_held
    return None
