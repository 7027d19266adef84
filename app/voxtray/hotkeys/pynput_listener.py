"""Global hotkeys through pynput: X11 through the RECORD extension, macOS, Windows.

RECORD is a passive tap, so it never takes a key away from other programs and cannot tell
whether one of them has grabbed the combination (`conflicts.x11_grab_conflict` asks that).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from voxtray.choices import HotkeyBackend
from voxtray.desktop import xlib
from voxtray.desktop.session import DisplayServer
from voxtray.errors import ExitCode, VoxtrayError, first_line
from voxtray.hotkeys.base import Callback, ComboTracker, ListenerBase, import_untyped
from voxtray.hotkeys.keys import NAMED_KEYS, Hotkey, char_name

log = logging.getLogger(__name__)

_PYNPUT_KEYS = [
    # The generic name comes first: where pynput makes ctrl an alias of ctrl_l (X11), the
    # sided name wins; where they differ (Windows), ctrl stays "either side".
    *((attr, name) for kind in ("ctrl", "alt", "shift") for attr, name in (
        (kind, kind), (f"{kind}_l", f"left_{kind}"), (f"{kind}_r", f"right_{kind}"))),
    ("cmd", "super"), ("cmd_l", "left_super"), ("cmd_r", "right_super"),
    ("alt_gr", "right_alt"),
    *((name, name) for name in NAMED_KEYS if name in {
        "space", "enter", "tab", "esc", "backspace", "delete", "insert", "home", "end",
        "page_up", "page_down", "up", "down", "left", "right", "caps_lock", "num_lock",
        "scroll_lock", "print_screen", "pause", "menu"}),
    *((f"f{n}", f"f{n}") for n in range(1, 25)),
]  # fmt: skip
# macOS virtual key codes (kVK_ANSI_*): Option changes the character, not the code.
_MAC_VK = {
    code: char
    for code, char in enumerate("asdfhgzxcv?bqweryt123465=97-80]ou[ip?lj'k;\\,/nm.??`")
    if char != "?"  # codes that are not letters, digits or punctuation
}
_X11_ISO_LEVEL3_SHIFT = 0xFE03  # AltGr on most non-US X11 layouts; pynput has no Key for it


class PynputNames:
    """Maps pynput's Key and KeyCode objects to this module's key names."""

    def __init__(self, keyboard: ModuleType, platform: str) -> None:
        self._special: dict[Any, str] = {}
        for attr, name in _PYNPUT_KEYS:
            member = getattr(keyboard.Key, attr, None)
            if member is not None:
                self._special[member] = name
        self._key_type = keyboard.Key
        self._platform = platform

    def __call__(self, key: Any) -> str | None:
        if key is None:
            return None
        if isinstance(key, self._key_type):
            return self._special.get(key)
        vk = getattr(key, "vk", None)
        return self._vk_name(vk) or char_name(getattr(key, "char", None))

    def _vk_name(self, vk: int | None) -> str | None:
        if vk is None:
            return None
        if self._platform == "darwin":
            return char_name(_MAC_VK.get(vk))
        if self._platform == "win32" and (0x30 <= vk <= 0x39 or 0x41 <= vk <= 0x5A):
            return chr(vk).lower()
        if self._platform.startswith("linux") and vk == _X11_ISO_LEVEL3_SHIFT:
            return "right_alt"
        return None


class PynputBackend(ListenerBase):
    """Global hotkeys through pynput: X11 (RECORD extension) and macOS.

    pynput opens its X connection from the process's DISPLAY; `env` decides whether that
    is tried at all, and which display the RECORD check asks.
    """

    name = HotkeyBackend.PYNPUT

    def __init__(self, env: Mapping[str, str] | None = None, platform: str | None = None) -> None:
        super().__init__(env, platform)
        self._listener: Any = None
        self._tracker: ComboTracker | None = None

    def available(self) -> tuple[bool, str]:
        """Whether pynput can see global keys here, and why (never raises)."""
        try:
            return self._probe()
        except Exception as exc:
            return False, f"pynput failed: {first_line(exc)}"

    def _probe(self) -> tuple[bool, str]:
        session = self.session
        x11 = not session.native
        if x11 and not session.x11_display:
            return False, "no X11 display (DISPLAY is not set)"
        try:
            import_untyped("pynput.keyboard")
        except ImportError as exc:
            return False, f"pynput cannot be used: {first_line(exc)}"
        if x11:
            ok, why = _x11_has_record(session.x11_display)
            if not ok:
                return False, why
        if session.server is DisplayServer.MACOS:
            return _mac_trusted()
        if not x11:
            return True, "Windows hook"
        if session.xwayland:
            return True, "X11 through XWayland: sees keys only while an X11 window has focus"
        return True, why

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Start a pynput keyboard listener for `hotkey` (see `HotkeyBackend.start`).

        Raises:
            VoxtrayError: pynput is unavailable here or its listener did not start.
        """
        self.stop()
        ok, why = self.available()
        if not ok:
            raise VoxtrayError(f"pynput hotkeys unavailable: {why}", ExitCode.USAGE)
        keyboard = import_untyped("pynput.keyboard")
        tracker = ComboTracker(hotkey, on_press, on_release)
        names = PynputNames(keyboard, self.platform)

        def down(key: Any, injected: bool = False) -> None:
            tracker.key_down(names(key))

        def up(key: Any, injected: bool = False) -> None:
            tracker.key_up(names(key))

        listener = keyboard.Listener(on_press=down, on_release=up)
        listener.start()
        _wait_ready(listener)
        self._listener, self._tracker = listener, tracker

    def stop(self) -> None:
        """Stop the listener, if one runs; no callback runs after this returns."""
        listener, tracker = self._listener, self._tracker
        self._listener = self._tracker = None
        if tracker is not None:
            tracker.close()
        if listener is None:
            return
        listener.stop()
        unblock_x11_listener(listener)
        if threading.current_thread() is not listener:
            try:
                listener.join(2.0)
            except Exception:
                # join re-raises what failed inside the listener; it is stopped either way.
                log.exception("pynput listener failed")


def unblock_x11_listener(listener: Any) -> None:
    # pynput's X11 stop() queues RecordDisableContext on the blocked recording connection
    # without flushing it, so its thread would only end at the next key event (pynput
    # PR #583). Sending it on pynput's other connection ends the thread at once.
    display = getattr(listener, "_display_stop", None)
    context = getattr(listener, "_context", None)
    if display is None or context is None:
        return
    try:
        display.record_disable_context(context)
        display.flush()
    except Exception as exc:
        log.debug("could not disable the X11 RECORD context: %s", first_line(exc))


def _wait_ready(listener: Any, timeout_s: float = 5.0) -> None:
    # pynput's wait() blocks forever when the listener thread dies before it is ready.
    waiter = threading.Thread(target=listener.wait, daemon=True, name="voxtray-hotkey-wait")
    waiter.start()
    deadline = time.monotonic() + timeout_s
    while waiter.is_alive():
        if not listener.is_alive() or time.monotonic() > deadline:
            listener.stop()
            raise VoxtrayError("the pynput keyboard listener did not start", ExitCode.USAGE)
        waiter.join(0.02)


def _x11_has_record(display: str) -> tuple[bool, str]:
    if not xlib.libx11_available():
        return True, "X11 (libX11 not found to check for RECORD)"
    try:
        conn = xlib.XDisplay(display)
    except OSError as exc:
        return False, f"cannot open X11 display {display}: {first_line(exc)}"
    with conn:
        if not conn.has_extension("RECORD"):
            return False, f"X11 display {display} lacks the RECORD extension pynput needs"
    return True, "X11 RECORD extension"


def _mac_trusted() -> tuple[bool, str]:
    try:
        trusted = bool(import_untyped("HIServices").AXIsProcessTrusted())
    except Exception:
        return True, "macOS (Accessibility permission not checked)"
    if not trusted:
        return False, (
            "macOS has not allowed this app to watch the keyboard: add it under System "
            "Settings > Privacy & Security > Accessibility and Input Monitoring"
        )
    return True, "macOS event tap"
