"""Global push-to-talk hotkeys: parsing, keyboard backends and the press/release logic.

The module is Qt-free. A backend calls its `on_press`/`on_release` callables on its own
listener thread; the Qt layer marshals them to the GUI thread before touching widgets.

Backends:

* `PynputBackend` (pynput): X11 through the RECORD extension, and macOS. RECORD is a
  passive tap, so it never takes a key away from other programs and cannot tell whether
  one of them has grabbed the combination; `x11_grab_conflict` asks the X server that.
* `KeyboardBackend` (the `keyboard` package): Windows, and Linux as root with readable
  /dev/input devices (the only way to see keys on Wayland).
* `NoBackend`: nothing listens; the user binds `voxtray toggle` (or `voxtray start` on
  press, `voxtray stop` on release) to a shortcut in the desktop's settings.
"""

from __future__ import annotations

import glob
import importlib
import logging
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from app.errors import ExitCode, VoxtrayError

log = logging.getLogger(__name__)

Callback = Callable[[], None]

HOTKEY_BACKENDS = ("auto", "pynput", "keyboard", "none")
PTT_MODES = ("hold", "toggle", "hold_or_tap")
TAP_THRESHOLD_S = 0.3

# --- names -----------------------------------------------------------------------------

_KINDS = ("ctrl", "alt", "shift", "super")
_KIND_ALIASES = {
    "ctrl": ("ctrl", "control", "ctl"),
    "alt": ("alt", "option", "opt"),
    "shift": ("shift",),
    "super": ("super", "win", "windows", "cmd", "command", "meta"),
}
# Modifier names: the kind alone matches either side; left_/right_ names one side.
_MODIFIERS = frozenset(f"{side}{kind}" for kind in _KINDS for side in ("", "left_", "right_"))

_NAMED_KEYS: dict[str, tuple[str, ...]] = {
    "space": ("space", "spacebar"),
    "enter": ("enter", "return"),
    "tab": ("tab",),
    "esc": ("esc", "escape"),
    "backspace": ("backspace",),
    "delete": ("delete", "del"),
    "insert": ("insert", "ins"),
    "home": ("home",),
    "end": ("end",),
    "page_up": ("page_up", "pageup", "pgup", "prior"),
    "page_down": ("page_down", "pagedown", "pgdn", "next"),
    "up": ("up",),
    "down": ("down",),
    "left": ("left",),
    "right": ("right",),
    "caps_lock": ("caps_lock", "capslock"),
    "num_lock": ("num_lock", "numlock"),
    "scroll_lock": ("scroll_lock", "scrolllock"),
    "print_screen": ("print_screen", "printscreen", "print", "prtsc", "prtscn", "sysrq"),
    "pause": ("pause", "break"),
    "menu": ("menu", "apps", "application", "context_menu"),
    "minus": ("minus", "-"),
    "equal": ("equal", "equals", "="),
    "comma": ("comma", ","),
    "period": ("period", "dot", "."),
    "slash": ("slash", "/"),
    "backslash": ("backslash", "\\"),
    "semicolon": ("semicolon", ";"),
    "apostrophe": ("apostrophe", "quote", "'"),
    "grave": ("grave", "backtick", "backquote", "`"),
    "bracket_left": ("bracket_left", "bracketleft", "["),
    "bracket_right": ("bracket_right", "bracketright", "]"),
}
_PLAIN_KEYS = frozenset(
    [*"abcdefghijklmnopqrstuvwxyz0123456789", *(f"f{n}" for n in range(1, 25)), *_NAMED_KEYS]
)
_CHAR_NAMES = {alias: name for name, aliases in _NAMED_KEYS.items() for alias in aliases}
# A US layout's shifted characters, so that shift+1 arriving as "!" still releases "1".
_SHIFTED = dict(zip('!@#$%^&*()_+{}|:"<>?~', "1234567890-=[]\\;',./`", strict=True))


def _build_aliases() -> dict[str, str]:
    aliases = {name: name for name in _PLAIN_KEYS | _MODIFIERS}
    aliases |= _CHAR_NAMES
    for kind, words in _KIND_ALIASES.items():
        for word in words:
            aliases[word] = kind
            for left, right in ((f"left_{word}", f"right_{word}"), (f"{word}_l", f"{word}_r")):
                aliases |= {left: f"left_{kind}", right: f"right_{kind}"}
            aliases |= {f"l{word}": f"left_{kind}", f"r{word}": f"right_{kind}"}
    aliases |= {"alt_gr": "right_alt", "altgr": "right_alt"}
    return aliases


_ALIASES = _build_aliases()


def _kind(name: str) -> str:
    return name.removeprefix("left_").removeprefix("right_")


def _mod_order(name: str) -> tuple[int, str]:
    return _KINDS.index(_kind(name)), name


# --- Hotkey ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Hotkey:
    """A key combination: modifiers held together with one key.

    A modifier-only hotkey such as `right_ctrl` has that modifier as its `key`; with
    several modifiers and no other key, `key` is the last in ctrl, alt, shift, super order.

    Attributes:
        modifiers: Modifier names: `ctrl`, `alt`, `shift`, `super` (either side) or a
            sided `left_ctrl`, `right_alt`, ...
        key: A key name: `a`-`z`, `0`-`9`, `f1`-`f24`, `space`, `enter`, ... or a modifier.
    """

    modifiers: frozenset[str]
    key: str

    def __post_init__(self) -> None:
        unknown = sorted(name for name in self.modifiers if name not in _MODIFIERS)
        if unknown:
            raise ValueError(f"not modifiers: {', '.join(unknown)}")
        if self.key not in _PLAIN_KEYS | _MODIFIERS:
            raise ValueError(f"unknown key {self.key!r}")
        kinds = [_kind(name) for name in self.parts if name in _MODIFIERS]
        if len(kinds) != len(set(kinds)):
            raise ValueError(f"hotkey names a modifier twice: {self}")
        if self.key in _MODIFIERS:
            # Modifier-only combos are unordered: store them one way so equal ones compare equal.
            ordered = sorted(self.parts, key=_mod_order)
            object.__setattr__(self, "modifiers", frozenset(ordered[:-1]))
            object.__setattr__(self, "key", ordered[-1])

    @property
    def parts(self) -> frozenset[str]:
        """Every name in the combination, the key included."""
        return self.modifiers | {self.key}

    @property
    def modifier_only(self) -> bool:
        """Whether the combination is made of modifiers alone, such as `right_ctrl`."""
        return self.key in _MODIFIERS

    def __str__(self) -> str:
        return "+".join([*sorted(self.modifiers, key=_mod_order), self.key])


def parse_hotkey(text: str) -> Hotkey:
    """Parse a hotkey such as `ctrl+alt+space`, `<ctrl>+<shift>+d`, `F9` or `right_ctrl`.

    Case does not matter; `control`/`option`/`win`/`cmd`/`meta` and pynput's `<ctrl_r>`
    style are accepted. At most one key may be a non-modifier.

    Args:
        text: The hotkey as the user wrote it.

    Returns:
        The hotkey; `str()` of it is the canonical spelling.

    Raises:
        ValueError: With a one-line message naming the problem.
    """
    shown = " ".join(text.split())
    if not shown:
        raise ValueError("empty hotkey: write one such as ctrl+alt+space")
    names = [_parse_part(part, shown) for part in shown.split("+")]
    keys = [name for name in names if name not in _MODIFIERS]
    if len(keys) > 1:
        raise ValueError(f"hotkey {shown!r} has {len(keys)} non-modifier keys; use one")
    kinds = [_kind(name) for name in names if name in _MODIFIERS]
    repeated = sorted({kind for kind in kinds if kinds.count(kind) > 1})
    if repeated:
        raise ValueError(f"hotkey {shown!r} names {', '.join(repeated)} more than once")
    mods = sorted((name for name in names if name in _MODIFIERS), key=_mod_order)
    key = keys[0] if keys else mods.pop()
    return Hotkey(frozenset(mods), key)


def _parse_part(part: str, shown: str) -> str:
    word = part.strip().lower()
    if word.startswith("<") and word.endswith(">"):
        word = word[1:-1].strip()
    if not word:
        raise ValueError(f"hotkey {shown!r} has an empty part (keys are joined by '+')")
    if len(word) > 1:
        word = word.replace(" ", "_").replace("-", "_")
    try:
        return _ALIASES[word]
    except KeyError:
        raise ValueError(f"unknown key {part.strip()!r} in hotkey {shown!r}") from None


# --- combination tracking ---------------------------------------------------------------


class _ComboTracker:
    """Turns key-down/key-up events into one press and one release of a hotkey.

    The combination is pressed when all its keys are down and the modifier kinds held are
    exactly the hotkey's (so ctrl+shift+h does not fire ctrl+h). Sides are told apart only
    where the hotkey names one, as XGrabKey does. Auto-repeat arrives as more key-downs of
    a key already down, which change nothing while the combination is pressed. Releasing
    any key of the combination releases it.
    """

    def __init__(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        self._parts = hotkey.parts
        self._kinds = frozenset(_kind(name) for name in self._parts if name in _MODIFIERS)
        self._on_press = on_press
        self._on_release = on_release
        self._held: set[str] = set()
        self._active = False
        self._closed = False
        self._lock = threading.Lock()

    def key_down(self, name: str | None) -> None:
        if name is None:
            return
        with self._lock:
            if self._closed:
                return
            # Not ignored when already down: a key whose release was missed (e.g. behind
            # Windows' secure desktop) must not block the hotkey for good.
            self._held.add(name)
            fire = not self._active and self._matches()
            self._active = self._active or fire
        if fire:
            self._call(self._on_press)

    def key_up(self, name: str | None) -> None:
        if name is None:
            return
        with self._lock:
            if name not in self._held or self._closed:
                return
            self._held.discard(name)
            fire = self._active and not self._all_held()
            self._active = self._active and not fire
        if fire:
            self._call(self._on_release)

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def _all_held(self) -> bool:
        return all(self._is_held(part) for part in self._parts)

    def _is_held(self, part: str) -> bool:
        if part in _KINDS:
            return bool({part, f"left_{part}", f"right_{part}"} & self._held)
        return part in self._held

    def _matches(self) -> bool:
        held_kinds = {_kind(name) for name in self._held if name in _MODIFIERS}
        return held_kinds == self._kinds and self._all_held()

    @staticmethod
    def _call(callback: Callback) -> None:
        # An exception escaping into pynput would stop its listener for good.
        try:
            callback()
        except Exception:
            log.exception("hotkey callback failed")


def _char_name(char: str | None) -> str | None:
    if not char:
        return None
    if len(char) == 1 and 1 <= ord(char) <= 26:
        # Ctrl+letter arrives as a control character on some platforms.
        return chr(ord("a") + ord(char) - 1)
    lower = char.lower()
    lower = _SHIFTED.get(lower, lower)
    if len(lower) == 1 and lower.isascii() and lower.isalnum():
        return lower
    return _CHAR_NAMES.get(lower)


# --- backends --------------------------------------------------------------------------


class HotkeyBackend(Protocol):
    """Watches the keyboard for one hotkey and reports its press and release."""

    name: str

    def available(self) -> tuple[bool, str]:
        """Whether the backend can work here, and why (never raises)."""
        ...

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Start listening; a running backend is restarted with the new hotkey.

        `on_press` runs once when the whole combination becomes held; `on_release` once
        when any of its keys is released. Both run on the backend's own thread.
        """
        ...

    def stop(self) -> None:
        """Stop listening; no callback runs after this returns."""
        ...


def _import(module: str) -> ModuleType:
    # Imported on use: importing pynput opens an X connection, which must not happen at
    # import time of this module (and the packages have no type stubs).
    return importlib.import_module(module)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else exc.__class__.__name__


_PYNPUT_KEYS = [
    # The generic name comes first: where pynput makes ctrl an alias of ctrl_l (X11), the
    # sided name wins; where they differ (Windows), ctrl stays "either side".
    *((attr, name) for kind in ("ctrl", "alt", "shift") for attr, name in (
        (kind, kind), (f"{kind}_l", f"left_{kind}"), (f"{kind}_r", f"right_{kind}"))),
    ("cmd", "super"), ("cmd_l", "left_super"), ("cmd_r", "right_super"),
    ("alt_gr", "right_alt"),
    *((name, name) for name in _NAMED_KEYS if name in {
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


class _PynputNames:
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
        return self._vk_name(vk) or _char_name(getattr(key, "char", None))

    def _vk_name(self, vk: int | None) -> str | None:
        if vk is None:
            return None
        if self._platform == "darwin":
            return _char_name(_MAC_VK.get(vk))
        if self._platform == "win32" and (0x30 <= vk <= 0x39 or 0x41 <= vk <= 0x5A):
            return chr(vk).lower()
        if self._platform.startswith("linux") and vk == _X11_ISO_LEVEL3_SHIFT:
            return "right_alt"
        return None


class PynputBackend:
    """Global hotkeys through pynput: X11 (RECORD extension) and macOS."""

    name = "pynput"

    def __init__(self) -> None:
        self._listener: Any = None
        self._tracker: _ComboTracker | None = None

    def available(self) -> tuple[bool, str]:
        """Whether pynput can see global keys here, and why (never raises)."""
        try:
            return self._probe()
        except Exception as exc:
            return False, f"pynput failed: {_first_line(exc)}"

    def _probe(self) -> tuple[bool, str]:
        x11 = sys.platform not in ("darwin", "win32")
        if x11 and not os.environ.get("DISPLAY"):
            return False, "no X11 display (DISPLAY is not set)"
        try:
            _import("pynput.keyboard")
        except ImportError as exc:
            return False, f"pynput cannot be used: {_first_line(exc)}"
        if x11:
            ok, why = _x11_has_record(os.environ["DISPLAY"])
            if not ok:
                return False, why
        if sys.platform == "darwin":
            return _mac_trusted()
        if os.environ.get("WAYLAND_DISPLAY"):
            return True, "X11 through XWayland: sees keys only while an X11 window has focus"
        return True, "X11 RECORD extension" if sys.platform != "win32" else "Windows hook"

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Start a pynput keyboard listener for `hotkey` (see `HotkeyBackend.start`).

        Raises:
            VoxtrayError: pynput is unavailable here or its listener did not start.
        """
        self.stop()
        ok, why = self.available()
        if not ok:
            raise VoxtrayError(f"pynput hotkeys unavailable: {why}", ExitCode.USAGE)
        keyboard = _import("pynput.keyboard")
        tracker = _ComboTracker(hotkey, on_press, on_release)
        names = _PynputNames(keyboard, sys.platform)

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
        _unblock_x11_listener(listener)
        if threading.current_thread() is not listener:
            try:
                listener.join(2.0)
            except Exception:
                # join re-raises what failed inside the listener; it is stopped either way.
                log.exception("pynput listener failed")


def _unblock_x11_listener(listener: Any) -> None:
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
        log.debug("could not disable the X11 RECORD context: %s", _first_line(exc))


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
    xdisplay = _import("Xlib.display")
    try:
        conn = xdisplay.Display(display)
    except Exception as exc:
        return False, f"cannot open X11 display {display}: {_first_line(exc)}"
    try:
        if not conn.has_extension("RECORD"):
            return False, f"X11 display {display} lacks the RECORD extension pynput needs"
    finally:
        conn.close()
    return True, "X11 RECORD extension"


def _mac_trusted() -> tuple[bool, str]:
    try:
        trusted = bool(_import("HIServices").AXIsProcessTrusted())
    except Exception:
        return True, "macOS (Accessibility permission not checked)"
    if not trusted:
        return False, (
            "macOS has not allowed this app to watch the keyboard: add it under System "
            "Settings > Privacy & Security > Accessibility and Input Monitoring"
        )
    return True, "macOS event tap"


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
    if lower in _PLAIN_KEYS:
        return lower
    return _char_name(name)


class KeyboardBackend:
    """Global hotkeys through the `keyboard` package: Windows, or Linux as root."""

    name = "keyboard"

    def __init__(self) -> None:
        self._hook: Any = None
        self._tracker: _ComboTracker | None = None

    def available(self) -> tuple[bool, str]:
        """Whether the keyboard package can see keys here, and why (never raises)."""
        try:
            return self._probe()
        except Exception as exc:
            return False, f"keyboard failed: {_first_line(exc)}"

    def _probe(self) -> tuple[bool, str]:
        try:
            _import("keyboard")
        except ImportError as exc:
            return False, f"the keyboard package cannot be used: {_first_line(exc)}"
        if sys.platform == "win32":
            return True, "Windows keyboard hook"
        if sys.platform == "darwin":
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
        keyboard = _import("keyboard")
        tracker = _ComboTracker(hotkey, on_press, on_release)

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
                f"the keyboard package could not hook the keyboard: {_first_line(exc)}",
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
                _import("keyboard").unhook(hook)
            except Exception:
                log.exception("keyboard unhook failed")


_BIND_ADVICE = (
    "bind `voxtray toggle` to a shortcut in your desktop's keyboard settings (or "
    "`voxtray start` on press and `voxtray stop` on release, for push-to-talk)"
)


class NoBackend:
    """No listener: the desktop's own shortcut runs `voxtray toggle`/`start`/`stop`.

    Attributes:
        reason: Why this backend was chosen, with what the user should do.
    """

    name = "none"

    def __init__(self, reason: str = f"global hotkeys are off: {_BIND_ADVICE}") -> None:
        self.reason = reason

    def available(self) -> tuple[bool, str]:
        """Always available; the reason says how to bind the shortcut."""
        return True, self.reason

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Do nothing: the desktop delivers the shortcut through the command line."""

    def stop(self) -> None:
        """Do nothing."""


_BACKEND_TYPES: dict[str, Callable[[], HotkeyBackend]] = {
    "pynput": PynputBackend,
    "keyboard": KeyboardBackend,
    "none": NoBackend,
}


def choose_backend(
    preferred: str = "auto",
    env: Mapping[str, str] | None = None,
    *,
    platform: str | None = None,
) -> HotkeyBackend:
    """Pick the hotkey backend for this session.

    `auto` takes the keyboard package on Windows, pynput on macOS and X11, and on Wayland
    the keyboard package if it can read /dev/input (XWayland shows pynput keys only while
    an X11 window has focus); failing that, `NoBackend` with a reason telling the user to
    bind `voxtray toggle` in the desktop.

    Args:
        preferred: One of `HOTKEY_BACKENDS`.
        env: The environment to judge the session by; `os.environ` by default.
        platform: `sys.platform` by default.

    Returns:
        A backend, not yet started.

    Raises:
        VoxtrayError: `preferred` is unknown, or names a backend unavailable here.
    """
    if preferred not in HOTKEY_BACKENDS:
        choices = ", ".join(HOTKEY_BACKENDS)
        raise VoxtrayError(f"unknown hotkey backend {preferred!r}: use {choices}", ExitCode.USAGE)
    if preferred != "auto":
        backend = _BACKEND_TYPES[preferred]()
        ok, why = backend.available()
        if not ok:
            raise VoxtrayError(f"hotkey backend {preferred} is unavailable: {why}", ExitCode.USAGE)
        return backend
    return _choose_auto(os.environ if env is None else env, platform or sys.platform)


def _is_wayland(env: Mapping[str, str]) -> bool:
    return bool(env.get("WAYLAND_DISPLAY")) or env.get("XDG_SESSION_TYPE", "") == "wayland"


def _choose_auto(env: Mapping[str, str], platform: str) -> HotkeyBackend:
    wayland = platform not in ("win32", "darwin") and _is_wayland(env)
    order: Iterable[Callable[[], HotkeyBackend]]
    if platform == "win32":
        order = (KeyboardBackend, PynputBackend)
    elif platform == "darwin":
        order = (PynputBackend,)
    elif wayland or not env.get("DISPLAY"):
        order = (KeyboardBackend,)
    else:
        order = (PynputBackend, KeyboardBackend)
    reasons = []
    for make in order:
        backend = make()
        ok, why = backend.available()
        if ok:
            return backend
        reasons.append(f"{backend.name}: {why}")
    tried = "; ".join(reasons)
    if wayland:
        return NoBackend(f"Wayland lets no app watch global keys ({tried}): {_BIND_ADVICE}")
    return NoBackend(f"no global-hotkey backend works here ({tried}): {_BIND_ADVICE}")


# --- push-to-talk modes ----------------------------------------------------------------


class PushToTalk:
    """Turns hotkey presses and releases into recording starts and stops.

    Modes: `hold` (record while held), `toggle` (each press flips), and `hold_or_tap`:
    a press longer than the tap threshold acts as hold, a quick tap latches recording on
    until the next press. Not thread-safe: call it from one thread (the GUI thread).
    """

    def __init__(
        self,
        start: Callback,
        stop: Callback,
        mode: str = "hold_or_tap",
        *,
        clock: Callable[[], float] = time.monotonic,
        tap_threshold_s: float = TAP_THRESHOLD_S,
    ) -> None:
        """Set up the mode logic.

        Args:
            start: Starts recording.
            stop: Stops recording (and transcribes).
            mode: One of `PTT_MODES`.
            clock: Seconds, monotonic; injectable for tests.
            tap_threshold_s: In `hold_or_tap`, presses shorter than this are taps.

        Raises:
            ValueError: Unknown mode.
        """
        if mode not in PTT_MODES:
            raise ValueError(f"unknown push-to-talk mode {mode!r}: use {', '.join(PTT_MODES)}")
        self.mode = mode
        self._start_cb, self._stop_cb = start, stop
        self._clock = clock
        self._threshold = tap_threshold_s
        self._recording = False
        self._down = False
        self._down_at = 0.0
        self._press_started = False

    @property
    def recording(self) -> bool:
        """Whether this logic has recording switched on."""
        return self._recording

    def pressed(self) -> None:
        """The hotkey went down; a second press without a release is ignored."""
        if self._down:
            return
        self._down, self._down_at = True, self._clock()
        if self.mode == "hold":
            self._start()
        elif self.mode == "toggle":
            self._flip()
        else:
            self._press_started = not self._recording
            self._flip()

    def released(self) -> None:
        """The hotkey came up; a release without a press is ignored."""
        if not self._down:
            return
        self._down = False
        if self.mode == "hold" or self._long_hold_ended():
            self._stop()

    def _long_hold_ended(self) -> bool:
        # In hold_or_tap only a long press that started recording stops it; a tap latches.
        if self.mode != "hold_or_tap" or not self._press_started:
            return False
        return self._clock() - self._down_at >= self._threshold

    def reset(self) -> None:
        """Forget all state, e.g. after recording was stopped by other means."""
        self._recording = self._down = self._press_started = False

    def _flip(self) -> None:
        if self._recording:
            self._stop()
        else:
            self._start()

    def _start(self) -> None:
        if not self._recording:
            self._recording = True
            self._start_cb()

    def _stop(self) -> None:
        if self._recording:
            self._recording = False
            self._stop_cb()


# --- conflicts ---------------------------------------------------------------------------

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
_PUNCTUATION = frozenset(_CHAR_NAMES[alias] for alias in _CHAR_NAMES if len(alias) == 1)
_TYPING_KEYS = frozenset(["space", "enter", "tab", "backspace", *_PUNCTUATION])


def check_conflicts(hotkey: Hotkey) -> str | None:
    """Warn about a hotkey that desktops or typing commonly use.

    A simple table: it cannot see what this machine has bound (see `x11_grab_conflict`).

    Args:
        hotkey: The hotkey to judge.

    Returns:
        A one-line warning, or None when the combination looks free.
    """
    generic = str(Hotkey(frozenset(map(_kind, hotkey.modifiers)), _generic_key(hotkey.key)))
    if generic in _DESKTOP_COMBOS:
        return f"{hotkey} {_DESKTOP_COMBOS[generic]}"
    kinds = {_kind(name) for name in hotkey.modifiers}
    if hotkey.modifier_only:
        if all(name in _KINDS or name.startswith("left_") for name in hotkey.parts):
            return f"{hotkey} alone also fires at the start of every {generic} shortcut"
        return None
    if kinds <= {"shift"} and (len(hotkey.key) == 1 or hotkey.key in _TYPING_KEYS):
        return f"{hotkey} fires while you type"
    if kinds == {"ctrl"} and hotkey.key in _APP_SHORTCUT_LETTERS:
        return f"{hotkey} is a common application shortcut"
    return None


def _generic_key(key: str) -> str:
    return _kind(key) if key in _MODIFIERS else key


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
        python-xlib is missing).
    """
    if hotkey.modifier_only:
        return None
    try:
        taken = _x11_try_grab(hotkey, display)
    except Exception as exc:
        log.debug("X11 grab check skipped: %s", _first_line(exc))
        return None
    return f"{hotkey} is already grabbed by another X11 program" if taken else None


def _x11_try_grab(hotkey: Hotkey, display: str | None) -> bool:
    xdisplay, xk, x = _import("Xlib.display"), _import("Xlib.XK"), _import("Xlib.X")
    bad_access = _import("Xlib.error").BadAccess
    conn = xdisplay.Display(display)
    try:
        keysym = xk.string_to_keysym(_X11_KEYSYMS.get(hotkey.key, hotkey.key))
        keycode = conn.keysym_to_keycode(keysym)
        if not keycode:
            return False
        mask = sum(_X11_MASKS[_kind(name)] for name in hotkey.modifiers)
        errors: list[Any] = []
        conn.set_error_handler(lambda error, request=None: errors.append(error))
        root = conn.screen().root
        root.grab_key(keycode, mask, False, x.GrabModeAsync, x.GrabModeAsync)
        conn.sync()
        if not errors:
            root.ungrab_key(keycode, mask)
            conn.sync()
        return any(isinstance(error, bad_access) for error in errors)
    finally:
        conn.close()
