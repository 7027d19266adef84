"""Hotkey conflicts: combinations desktops commonly use, and X11 grabs by other programs."""

from __future__ import annotations

import logging

from voxtray.desktop import xlib
from voxtray.errors import first_line
from voxtray.hotkeys.keys import CHAR_NAMES, KINDS, MODIFIERS, Hotkey, kind

log = logging.getLogger(__name__)

_WORKSPACE = "switches workspace (GNOME, KDE)"
_TILES = "moves or tiles the window (GNOME, KDE, Windows)"
_DESKTOP_COMBOS: dict[str, str] = {
    "super": "opens the Activities overview or Start menu (GNOME, KDE, Windows)",
    "alt+tab": "switches windows on every desktop",
    "alt+shift+tab": "switches windows on every desktop",
    "alt+f2": "opens the run dialog (GNOME, KDE)",
    "alt+f4": "closes the active window",
    "alt+space": "opens the window menu (GNOME, Windows) or KRunner (KDE)",
    "alt+esc": "cycles windows (GNOME, Windows)",
    "alt+print_screen": "takes a screenshot of the window",
    "ctrl+space": "switches the input method (IBus, Fcitx) or input source (macOS)",
    "ctrl+esc": "opens the Start menu (Windows)",
    "ctrl+shift+esc": "opens the Task Manager (Windows)",
    "ctrl+alt+delete": "is reserved by Windows and opens the log-out dialog on GNOME",
    "ctrl+alt+backspace": "can kill the X server",
    "ctrl+alt+t": "opens a terminal (Ubuntu, GNOME, KDE, Mint)",
    "ctrl+alt+l": "locks the screen (Ubuntu, Cinnamon, Xfce)",
    "ctrl+alt+left": _WORKSPACE,
    "ctrl+alt+right": _WORKSPACE,
    "ctrl+alt+up": _WORKSPACE,
    "ctrl+alt+down": _WORKSPACE,
    "print_screen": "takes a screenshot",
    "super+a": "shows the applications (GNOME)",
    "super+d": "shows the desktop (Windows, KDE)",
    "super+e": "opens the file manager (Windows, KDE)",
    "super+h": "hides the window (GNOME, macOS) and starts Windows voice typing",
    "super+l": "locks the screen (GNOME, KDE, Windows)",
    "super+p": "switches displays (Windows, GNOME)",
    "super+q": "quits the app (macOS)",
    "super+r": "opens Run (Windows)",
    "super+s": "opens search (Windows)",
    "super+v": "opens the clipboard history (Windows) or notification list (GNOME)",
    "super+w": "closes the window (macOS)",
    "super+tab": "switches applications (macOS, GNOME) or opens Task View (Windows)",
    "super+space": "opens Spotlight (macOS) or switches the keyboard layout (GNOME, Windows)",
    "super+left": _TILES,
    "super+right": _TILES,
    "super+up": _TILES,
    "super+down": _TILES,
    **{f"ctrl+alt+f{n}": "switches to a text console (Linux)" for n in range(1, 13)},
}
_APP_SHORTCUT_LETTERS = "acfnopqrstvwxyz"
_PUNCTUATION = frozenset(CHAR_NAMES[alias] for alias in CHAR_NAMES if len(alias) == 1)
_TYPING_KEYS = frozenset(["space", "enter", "tab", "backspace", *_PUNCTUATION])


def check_conflicts(hotkey: Hotkey) -> str | None:
    """Warn about a hotkey that desktops or typing commonly use.

    A simple table: it cannot see what this machine has bound (see `x11_grab_conflict`).

    Args:
        hotkey: The hotkey to judge.

    Returns:
        A one-line warning, or None when the combination looks free.
    """
    generic = str(Hotkey(frozenset(map(kind, hotkey.modifiers)), _generic_key(hotkey.key)))
    if generic in _DESKTOP_COMBOS:
        return f"{hotkey} {_DESKTOP_COMBOS[generic]}"
    kinds = {kind(name) for name in hotkey.modifiers}
    if hotkey.modifier_only:
        if all(name in KINDS or name.startswith("left_") for name in hotkey.parts):
            return f"{hotkey} alone also fires at the start of every {generic} shortcut"
        return None
    if kinds <= {"shift"} and (len(hotkey.key) == 1 or hotkey.key in _TYPING_KEYS):
        return f"{hotkey} fires while you type"
    if kinds == {"ctrl"} and hotkey.key in _APP_SHORTCUT_LETTERS:
        return f"{hotkey} is a common application shortcut"
    return None


def _generic_key(key: str) -> str:
    return kind(key) if key in MODIFIERS else key


_X11_KEYSYMS = {
    "space": "space", "enter": "Return", "tab": "Tab", "esc": "Escape",
    "backspace": "BackSpace", "delete": "Delete", "insert": "Insert", "home": "Home",
    "end": "End", "page_up": "Prior", "page_down": "Next", "up": "Up", "down": "Down",
    "left": "Left", "right": "Right", "caps_lock": "Caps_Lock", "num_lock": "Num_Lock",
    "scroll_lock": "Scroll_Lock", "print_screen": "Print", "pause": "Pause", "menu": "Menu",
    "bracket_left": "bracketleft", "bracket_right": "bracketright",
    **{f"f{n}": f"F{n}" for n in range(1, 25)},
}  # fmt: skip
# Core X11 modifier masks: ShiftMask, ControlMask, Mod1 (Alt), Mod4 (Super) on common maps.
_X11_MASKS = {"shift": 1 << 0, "ctrl": 1 << 2, "alt": 1 << 3, "super": 1 << 6}


def x11_grab_conflict(hotkey: Hotkey, display: str | None = None) -> str | None:
    """Ask the X server whether another program has grabbed `hotkey` (XGrabKey).

    It tries the grab itself and lets go at once: X answers BadAccess while another
    client holds it. pynput's RECORD tap still sees such a combination, so both programs
    would react. Modifier-only hotkeys, other modifier states (Caps/Num Lock) and
    desktops that read keys without grabs (Wayland compositors) are not checked.

    Args:
        hotkey: The hotkey to test.
        display: The X display; `$DISPLAY` by default.

    Returns:
        A one-line warning when the combination is taken, else None (also when X11 or
        libX11 is missing).
    """
    if hotkey.modifier_only:
        return None
    try:
        taken = _x11_try_grab(hotkey, display)
    except OSError as exc:
        log.debug("X11 grab check skipped: %s", first_line(exc))
        return None
    return f"{hotkey} is already grabbed by another X11 program" if taken else None


def _x11_try_grab(hotkey: Hotkey, display: str | None) -> bool:
    with xlib.XDisplay(display) as conn:
        keycode = conn.keycode(_X11_KEYSYMS.get(hotkey.key, hotkey.key))
        if not keycode:
            return False
        mask = sum(_X11_MASKS[kind(name)] for name in hotkey.modifiers)
        return conn.grabbed_elsewhere(keycode, mask)
