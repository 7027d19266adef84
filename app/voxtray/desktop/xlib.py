"""The few Xlib calls the X11 code needs (typing, hotkey checks), through ctypes.

libX11 is on every X11 desktop (xdotool and Qt link it), so reading the keyboard state,
editing the keyboard map and testing a key grab need no Python package. libXtst (to release
a held key) and libxkbcommon (to read legacy keysyms as characters) are used when present.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import logging
import threading
import unicodedata
from collections.abc import Iterator
from types import TracebackType

log = logging.getLogger(__name__)

KeySym = int
Keymap = dict[int, tuple[KeySym, ...]]
"""Keycode to the keysyms the core keyboard map lists for it (0 is NoSymbol)."""

_KeySymArray = ctypes.POINTER(ctypes.c_ulong)

MODIFIER_KEYSYMS: dict[KeySym, str] = {
    0xFFE1: "shift",  # Shift_L
    0xFFE2: "shift",  # Shift_R
    0xFFE3: "ctrl",  # Control_L
    0xFFE4: "ctrl",  # Control_R
    0xFFE7: "alt",  # Meta_L
    0xFFE8: "alt",  # Meta_R
    0xFFE9: "alt",  # Alt_L
    0xFFEA: "alt",  # Alt_R
    0xFFEB: "super",  # Super_L
    0xFFEC: "super",  # Super_R
    0xFFED: "super",  # Hyper_L
    0xFFEE: "super",  # Hyper_R
    0xFE03: "altgr",  # ISO_Level3_Shift
    0xFE11: "altgr",  # ISO_Level5_Shift
    0xFF7E: "altgr",  # Mode_switch
}
"""Keys that, held while text is typed, turn letters into shortcuts or other symbols."""


class X11Unavailable(OSError):
    """libX11 is missing or the X server cannot be reached."""


def _load(names: tuple[str, ...]) -> ctypes.CDLL | None:
    for name in names:
        path = ctypes.util.find_library(name)
        for candidate in (path, f"lib{name}.so.6", f"lib{name}.so.0", f"lib{name}.so"):
            if not candidate:
                continue
            try:
                return ctypes.CDLL(candidate)
            except OSError:
                continue
    return None


@functools.cache
def _x11() -> ctypes.CDLL | None:
    lib = _load(("X11",))
    if lib is None:
        return None
    lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
    lib.XOpenDisplay.restype = ctypes.c_void_p
    lib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    lib.XDisplayKeycodes.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_int),
    ]
    # KeyCode is declared unsigned int when Xlib is built with wide prototypes (always).
    lib.XGetKeyboardMapping.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_int),
    ]
    lib.XGetKeyboardMapping.restype = _KeySymArray
    lib.XChangeKeyboardMapping.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
        _KeySymArray,
        ctypes.c_int,
    ]
    lib.XQueryKeymap.argtypes = [ctypes.c_void_p, ctypes.c_char * 32]
    lib.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.XFree.argtypes = [ctypes.c_void_p]
    # Xlib's default handler prints a protocol error and exits the process; a rejected
    # keymap change must not take the dictation app down.
    lib.XQueryExtension.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_int),
    ]
    lib.XStringToKeysym.argtypes = [ctypes.c_char_p]
    lib.XStringToKeysym.restype = ctypes.c_ulong
    lib.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    lib.XKeysymToKeycode.restype = ctypes.c_ubyte
    lib.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    lib.XDefaultRootWindow.restype = ctypes.c_ulong
    lib.XGrabKey.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_ulong,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
    ]
    lib.XUngrabKey.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong]
    lib.XSetErrorHandler.argtypes = [_ERROR_HANDLER]
    lib.XSetErrorHandler.restype = ctypes.c_void_p
    lib.XSetErrorHandler(_record_errors)
    _declare_window_calls(lib)
    return lib


def _declare_window_calls(lib: ctypes.CDLL) -> None:
    """The calls that ask which window has the focus, whether it exists and its title."""
    ulong_p = ctypes.POINTER(ctypes.c_ulong)
    int_p = ctypes.POINTER(ctypes.c_int)
    lib.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.XInternAtom.restype = ctypes.c_ulong
    lib.XGetWindowProperty.argtypes = [
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_long,
        ctypes.c_long,
        ctypes.c_int,
        ctypes.c_ulong,
        ulong_p,
        int_p,
        ulong_p,
        ulong_p,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte)),
    ]
    lib.XGetInputFocus.argtypes = [ctypes.c_void_p, ulong_p, int_p]
    lib.XQueryTree.argtypes = [
        ctypes.c_void_p,
        ctypes.c_ulong,
        ulong_p,
        ulong_p,
        ctypes.POINTER(ulong_p),
        ctypes.POINTER(ctypes.c_uint),
    ]
    lib.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p]


class _XErrorEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("resourceid", ctypes.c_ulong),
        ("serial", ctypes.c_ulong),
        ("error_code", ctypes.c_ubyte),
        ("request_code", ctypes.c_ubyte),
        ("minor_code", ctypes.c_ubyte),
    ]


_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_XErrorEvent))
_BAD_ACCESS = 10
_GRAB_MODE_ASYNC = 1
_POINTER_ROOT = 1
_ANY_PROPERTY_TYPE = 0
# XWindowAttributes is 136 bytes on LP64; the call only needs room to write it.
_ATTRIBUTES_SIZE = 256

# Error codes per display connection, for the calls that need to see their errors.
_errors: dict[int, list[int]] = {}
_errors_lock = threading.Lock()


def _on_x_error(display: int | None, event: ctypes._Pointer[_XErrorEvent]) -> int:
    code = int(event.contents.error_code) if event else 0
    with _errors_lock:
        if display in _errors:
            _errors[display].append(code)
            return 0
    log.debug("X protocol error %d ignored", code)
    return 0


# Kept at module level: the C library holds only a pointer to it.
_record_errors = _ERROR_HANDLER(_on_x_error)


@functools.cache
def _xtst() -> ctypes.CDLL | None:
    lib = _load(("Xtst",))
    if lib is not None:
        lib.XTestFakeKeyEvent.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_ulong,
        ]
    return lib


@functools.cache
def _xkbcommon() -> ctypes.CDLL | None:
    lib = _load(("xkbcommon",))
    if lib is not None:
        lib.xkb_keysym_to_utf32.argtypes = [ctypes.c_uint32]
        lib.xkb_keysym_to_utf32.restype = ctypes.c_uint32
    return lib


def libx11_available() -> bool:
    return _x11() is not None


def char_keysym(char: str) -> KeySym:
    """The keysym X uses for a character: Latin-1 keysyms below 0x100, Unicode ones above."""
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x1000000 | code


def is_control(char: str) -> bool:
    """Control characters (newline, tab) are typed as keys, never bound as symbols."""
    return unicodedata.category(char) == "Cc"


def keysym_char(keysym: KeySym) -> str | None:
    """The character a keysym types, or None for function keys and NoSymbol."""
    lib = _xkbcommon()
    if lib is not None:
        code = int(lib.xkb_keysym_to_utf32(keysym & 0xFFFFFFFF))
        return chr(code) if code >= 0x20 and not 0x7F <= code <= 0x9F else None
    if 0x20 <= keysym <= 0x7E or 0xA0 <= keysym <= 0xFF:
        return chr(keysym)
    if 0x10000A0 <= keysym <= 0x110FFFF:
        return chr(keysym - 0x1000000)
    return None


class XDisplay:
    """A private connection to an X server, closed by ``close()`` or ``with``."""

    def __init__(self, name: str | None) -> None:
        lib = _x11()
        if lib is None:
            raise X11Unavailable("libX11 not found")
        self._lib = lib
        self._dpy: int | None = lib.XOpenDisplay(name.encode() if name else None)
        if not self._dpy:
            raise X11Unavailable(f"cannot open X display {name or '(DISPLAY unset)'}")

    def __enter__(self) -> XDisplay:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._dpy:
            self._lib.XCloseDisplay(self._dpy)
            self._dpy = None

    def keymap(self) -> Keymap:
        """The core keyboard map, every keycode the server has."""
        low, high = ctypes.c_int(), ctypes.c_int()
        self._lib.XDisplayKeycodes(self._dpy, ctypes.byref(low), ctypes.byref(high))
        count = high.value - low.value + 1
        per = ctypes.c_int()
        syms = self._lib.XGetKeyboardMapping(self._dpy, low.value, count, ctypes.byref(per))
        if not syms:
            return {}
        try:
            width = per.value
            return {
                low.value + i: tuple(int(syms[i * width + j]) for j in range(width))
                for i in range(count)
            }
        finally:
            self._lib.XFree(syms)

    def set_keysyms(self, keycode: int, keysyms: tuple[KeySym, KeySym]) -> None:
        """Bind a keycode to a keysym without and with Shift (0 clears it)."""
        array = (ctypes.c_ulong * 2)(*keysyms)
        self._lib.XChangeKeyboardMapping(self._dpy, keycode, 2, array, 1)

    def sync(self) -> None:
        self._lib.XSync(self._dpy, 0)

    def has_extension(self, name: str) -> bool:
        """Whether the server offers an extension, such as RECORD."""
        opcode, event, error = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        found = self._lib.XQueryExtension(
            self._dpy, name.encode(), ctypes.byref(opcode), ctypes.byref(event), ctypes.byref(error)
        )
        return bool(found)

    def keycode(self, keysym_name: str) -> int:
        """The keycode that types a keysym named as in X's keysymdef (`space`, `F9`); 0 if none."""
        keysym = self._lib.XStringToKeysym(keysym_name.encode())
        return int(self._lib.XKeysymToKeycode(self._dpy, keysym)) if keysym else 0

    def grabbed_elsewhere(self, keycode: int, modifiers: int) -> bool:
        """Whether another client holds a passive grab of this key on the root window.

        The grab is tried and let go at once: X answers BadAccess while another client
        holds it.
        """
        lib, dpy = self._lib, self._dpy
        with self._trapped() as errors:
            root = lib.XDefaultRootWindow(dpy)
            lib.XGrabKey(dpy, keycode, modifiers, root, 0, _GRAB_MODE_ASYNC, _GRAB_MODE_ASYNC)
            lib.XSync(dpy, 0)
            taken = _BAD_ACCESS in errors
            if not errors:
                lib.XUngrabKey(dpy, keycode, modifiers, root)
                lib.XSync(dpy, 0)
        return taken

    @contextlib.contextmanager
    def _trapped(self) -> Iterator[list[int]]:
        """Collect the X errors this connection's calls raise instead of logging them."""
        lib, dpy = self._lib, self._dpy
        if not dpy:
            raise X11Unavailable("the X display is closed")
        # Qt installs its own handler; ours must be the one that sees these errors.
        lib.XSetErrorHandler(_record_errors)
        found: list[int] = []
        with _errors_lock:
            _errors[dpy] = found
        try:
            yield found
        finally:
            with _errors_lock:
                _errors.pop(dpy, None)

    def root(self) -> int:
        return int(self._lib.XDefaultRootWindow(self._dpy))

    def _property(self, window: int, name: str, limit: int = 256) -> tuple[int, int, bytes]:
        """A window property: (type atom, format, raw bytes); type 0 when it is unset."""
        lib = self._lib
        atom = lib.XInternAtom(self._dpy, name.encode(), 1)
        if not atom:
            return 0, 0, b""
        kind, fmt = ctypes.c_ulong(), ctypes.c_int()
        count, after = ctypes.c_ulong(), ctypes.c_ulong()
        data = ctypes.POINTER(ctypes.c_ubyte)()
        with self._trapped() as errors:
            status = lib.XGetWindowProperty(
                self._dpy, window, atom, 0, limit, 0, _ANY_PROPERTY_TYPE,
                ctypes.byref(kind), ctypes.byref(fmt), ctypes.byref(count),
                ctypes.byref(after), ctypes.byref(data),
            )  # fmt: skip
            lib.XSync(self._dpy, 0)
        try:
            if status != 0 or errors or not kind.value:
                return 0, 0, b""
            # Format 32 items are C longs in memory, whatever their wire size.
            width = {8: 1, 16: 2, 32: ctypes.sizeof(ctypes.c_ulong)}.get(fmt.value, 1)
            return kind.value, fmt.value, ctypes.string_at(data, count.value * width)
        finally:
            if data:
                lib.XFree(data)

    def active_window(self) -> int | None:
        """The window manager's `_NET_ACTIVE_WINDOW`; None when no EWMH manager sets it."""
        kind, fmt, raw = self._property(self.root(), "_NET_ACTIVE_WINDOW", 1)
        if not kind or fmt != 32 or len(raw) < ctypes.sizeof(ctypes.c_ulong):
            return None
        return int(ctypes.c_ulong.from_buffer_copy(raw).value)

    def input_focus(self) -> int:
        """The window with the keyboard focus; 0 for none and 1 for PointerRoot."""
        focus, revert = ctypes.c_ulong(), ctypes.c_int()
        self._lib.XGetInputFocus(self._dpy, ctypes.byref(focus), ctypes.byref(revert))
        return int(focus.value)

    def toplevel(self, window: int) -> int:
        """The ancestor of a window that is a child of the root (the window itself if so)."""
        root = self.root()
        if window in (0, _POINTER_ROOT, root):
            return window
        lib = self._lib
        current = window
        while True:
            root_out, parent = ctypes.c_ulong(), ctypes.c_ulong()
            children, count = ctypes.POINTER(ctypes.c_ulong)(), ctypes.c_uint()
            with self._trapped() as errors:
                ok = lib.XQueryTree(
                    self._dpy, current, ctypes.byref(root_out), ctypes.byref(parent),
                    ctypes.byref(children), ctypes.byref(count),
                )  # fmt: skip
            if children:
                lib.XFree(children)
            if not ok or errors or parent.value in (0, root):
                return current
            current = int(parent.value)

    def window_exists(self, window: int) -> bool:
        """Whether the window is still there (not destroyed)."""
        if window in (0, _POINTER_ROOT):
            return False
        buffer = ctypes.create_string_buffer(_ATTRIBUTES_SIZE)
        with self._trapped() as errors:
            ok = self._lib.XGetWindowAttributes(self._dpy, window, buffer)
            self._lib.XSync(self._dpy, 0)
        return bool(ok) and not errors

    def window_title(self, window: int) -> str:
        """`_NET_WM_NAME` (UTF-8), else `WM_NAME`; "" when it has neither."""
        kind, _fmt, raw = self._property(window, "_NET_WM_NAME")
        if kind and raw:
            return raw.decode("utf-8", "replace")
        kind, _fmt, raw = self._property(window, "WM_NAME")
        return raw.decode("latin-1") if kind and raw else ""

    def window_class(self, window: int) -> tuple[str, ...]:
        """`WM_CLASS`: the instance and class names ("xterm", "XTerm"); () when unset."""
        kind, _fmt, raw = self._property(window, "WM_CLASS")
        if not kind:
            return ()
        return tuple(part.decode("latin-1") for part in raw.split(b"\0") if part)

    def pressed_keycodes(self) -> set[int]:
        bits = (ctypes.c_char * 32)()
        self._lib.XQueryKeymap(self._dpy, bits)
        return {
            byte * 8 + bit
            for byte, value in enumerate(bits.raw)
            for bit in range(8)
            if value & (1 << bit)
        }

    def release_keys(self, keycodes: set[int]) -> bool:
        """Send key-up events for the keycodes through XTEST; False without libXtst."""
        lib = _xtst()
        if lib is None:
            return False
        for keycode in sorted(keycodes):
            lib.XTestFakeKeyEvent(self._dpy, keycode, 0, 0)
        self.sync()
        return True


def modifier_keycodes(keymap: Keymap) -> dict[int, str]:
    """Keycode to modifier name, for every key that acts as a modifier."""
    found: dict[int, str] = {}
    for keycode, syms in keymap.items():
        for sym in syms:
            if sym in MODIFIER_KEYSYMS:
                found[keycode] = MODIFIER_KEYSYMS[sym]
                break
    return found


def held_modifier_keycodes(display: XDisplay, keymap: Keymap) -> dict[int, str]:
    """The modifier keys that are down right now, keycode to name."""
    modifiers = modifier_keycodes(keymap)
    return {code: modifiers[code] for code in display.pressed_keycodes() if code in modifiers}
