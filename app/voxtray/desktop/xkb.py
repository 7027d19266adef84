"""Keymaps through libxkbcommon (ctypes): the keycode a keysym sits on, a modifier's mask,
and the user's default keymap where the seat lends none.

libxkbcommon is there wherever a Wayland compositor or toolkit runs (sway, GTK and Qt
link it). Without it, or without the keymap data, `Keymap.parse` and `Keymap.default`
give None and the callers keep to their other path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

_TEXT_V1 = 1
_NO_FLAGS = 0
_NO_ENVIRONMENT_NAMES = 2  # the names come from the session's environment we are given
_EVDEV_OFFSET = 8  # an xkb keycode is the kernel's (evdev) code plus 8
_INVALID = 0xFFFFFFFF


class _RuleNames(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_char_p) for name in ("rules", "model", "layout", "variant", "options")
    ]


@functools.cache
def _library() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("xkbcommon") or "libxkbcommon.so.0"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    pointer, text, integer = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32
    for function, result, arguments in (
        ("xkb_context_new", pointer, [integer]),
        ("xkb_context_unref", None, [pointer]),
        ("xkb_keymap_new_from_string", pointer, [pointer, text, integer, integer]),
        ("xkb_keymap_new_from_names", pointer, [pointer, ctypes.POINTER(_RuleNames), integer]),
        ("xkb_keymap_get_as_string", pointer, [pointer, integer]),
        ("xkb_keymap_unref", None, [pointer]),
        ("xkb_keymap_min_keycode", integer, [pointer]),
        ("xkb_keymap_max_keycode", integer, [pointer]),
        ("xkb_keymap_key_get_syms_by_level", ctypes.c_int,
         [pointer, integer, integer, integer, ctypes.POINTER(ctypes.POINTER(integer))]),
        ("xkb_keymap_mod_get_index", integer, [pointer, text]),
        ("xkb_keysym_from_name", integer, [text, integer]),
    ):  # fmt: skip
        bound = getattr(lib, function)
        bound.restype, bound.argtypes = result, arguments
    return lib


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    return libc


@dataclass(frozen=True)
class Keymap:
    """A keymap as the compositor takes it (`text`, NUL-terminated) and what it says of
    the keys: for each keysym on the first level of the first layout, its evdev code;
    each modifier's mask."""

    text: bytes
    codes: Mapping[int, int]
    masks: Mapping[str, int]

    @classmethod
    def parse(cls, text: bytes) -> Keymap | None:
        """The keymap ``text`` (an XKB_KEYMAP_FORMAT_TEXT_V1 string); None where it
        cannot be read."""
        return _compiled(lambda lib, context: lib.xkb_keymap_new_from_string(
            context, text.rstrip(b"\0"), _TEXT_V1, _NO_FLAGS
        ))  # fmt: skip

    @classmethod
    def default(cls, env: Mapping[str, str] | None = None) -> Keymap | None:
        """The keymap a compositor builds with no configuration: the layout the
        XKB_DEFAULT_* variables name (as sway and libxkbcommon read them), else the
        system's default."""
        env = os.environ if env is None else env
        values = [env.get(f"XKB_DEFAULT_{part.upper()}", "").encode() or None
                  for part in ("rules", "model", "layout", "variant", "options")]  # fmt: skip
        names = _RuleNames(*values)
        return _compiled(
            lambda lib, context: lib.xkb_keymap_new_from_names(
                context, ctypes.byref(names), _NO_FLAGS
            )
        )

    def code(self, keysym: str) -> int | None:
        """The evdev code of the key that gives ``keysym`` ("v", "Insert") unshifted."""
        value = _keysym(keysym)
        return None if value is None else self.codes.get(value)

    def mask(self, modifier: str) -> int:
        """The mask of ``modifier`` ("Control", "Shift"); 0 where the keymap lacks it."""
        return self.masks.get(modifier, 0)


def _keysym(name: str) -> int | None:
    lib = _library()
    if lib is None:
        return None
    value = int(lib.xkb_keysym_from_name(name.encode(), _NO_FLAGS))
    return value or None


def _compiled(build: Callable[[ctypes.CDLL, int], int | None]) -> Keymap | None:
    lib = _library()
    if lib is None:
        return None
    context = lib.xkb_context_new(_NO_ENVIRONMENT_NAMES)
    if not context:
        return None
    try:
        keymap = build(lib, context)
        if not keymap:
            return None
        try:
            return _read(lib, keymap)
        finally:
            lib.xkb_keymap_unref(keymap)
    finally:
        lib.xkb_context_unref(context)


def _read(lib: ctypes.CDLL, keymap: int) -> Keymap | None:
    raw = lib.xkb_keymap_get_as_string(keymap, _TEXT_V1)
    if not raw:
        return None
    try:
        text = ctypes.string_at(raw) + b"\0"
    finally:
        _libc().free(raw)
    codes: dict[int, int] = {}
    syms = ctypes.POINTER(ctypes.c_uint32)()
    for keycode in range(
        lib.xkb_keymap_min_keycode(keymap), lib.xkb_keymap_max_keycode(keymap) + 1
    ):
        count = lib.xkb_keymap_key_get_syms_by_level(keymap, keycode, 0, 0, ctypes.byref(syms))
        for index in range(max(count, 0)):
            codes.setdefault(int(syms[index]), keycode - _EVDEV_OFFSET)
    masks: dict[str, int] = {}
    for modifier in ("Shift", "Control", "Mod1", "Mod4"):
        index = lib.xkb_keymap_mod_get_index(keymap, modifier.encode())
        if index != _INVALID:
            masks[modifier] = 1 << index
    return Keymap(text, codes, masks)
