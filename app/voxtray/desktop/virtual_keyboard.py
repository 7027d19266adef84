"""Keys pressed through the compositor's virtual-keyboard protocol (sway, Hyprland and other
wlroots compositors) with the seat's own keymap.

wtype uploads a keymap of its own, made of the keys it presses. GTK 3 matches its key
bindings (Ctrl+V, Shift+Insert, BackSpace, Return, the arrows) by the keycodes of the
keymap it started with, so under wtype's keymap those keys do nothing in a GTK 3 window,
while typed characters arrive. Pressed here, each key sits on the keycode the user's own
keymap gives it: the keymap the seat's keyboard has, or where the seat has no keyboard yet,
the one the compositor builds by default (`Keymap.default`).
"""

from __future__ import annotations

import contextlib
import functools
import operator
import os
import time
from collections.abc import Iterator, Mapping, Sequence

from voxtray.desktop.wayland_wire import Connection, Reader, WireError, uint
from voxtray.desktop.xkb import Keymap

MANAGER = "zwp_virtual_keyboard_manager_v1"
_SEAT_GET_KEYBOARD = 1
_SEAT_CAPABILITIES = 0
_CAN_KEYBOARD = 4
_KEYBOARD_KEYMAP = 0
_MANAGER_CREATE = 0
_KEYMAP, _KEY, _MODIFIERS, _DESTROY = 0, 1, 2, 3
_XKB_V1 = 1
_PRESSED, _RELEASED = 1, 0

MODIFIERS = {"ctrl": "Control", "shift": "Shift", "alt": "Mod1", "super": "Mod4"}
"""The chord names `press` takes, and the keymap's modifier each holds."""


class KeyboardError(Exception):
    """No virtual keyboard here, or a key its keymap does not have; one line. Nothing was
    pressed: another way may press the keys."""


class KeysSentError(KeyboardError):
    """The compositor failed once the keys were on their way: some may have been pressed,
    so pressing them again another way could repeat them (a second paste, more erased)."""


def offered(env: Mapping[str, str], timeout: float = 1.0) -> bool:
    """Whether the session's compositor offers the virtual-keyboard protocol."""
    try:
        connection = Connection(env, timeout)
    except WireError:
        return False
    try:
        return MANAGER in connection.globals and "wl_seat" in connection.globals
    finally:
        connection.close()


def press(
    env: Mapping[str, str], keys: Sequence[str], count: int = 1, timeout: float = 2.0
) -> None:
    """Press the chord ``keys`` ``count`` times: modifier names (`MODIFIERS`) and then one
    keysym name, as ("ctrl", "shift", "v") or ("BackSpace",).

    Raises:
        KeyboardError: The compositor has no virtual keyboard, or no keymap has the keys.
        KeysSentError: It failed while the keys were sent.
    """
    with _keyboard(env, keys, timeout) as (connection, keyboard, chord):
        mask, code = chord
        try:
            _modifiers(connection, keyboard, mask)
            for _ in range(count):
                _key(connection, keyboard, code, _PRESSED)
                _key(connection, keyboard, code, _RELEASED)
            _modifiers(connection, keyboard, 0)
            connection.roundtrip()
        except WireError as exc:
            raise KeysSentError(f"the compositor failed as the keys were pressed: {exc}") from exc


def chord_in(keymap: Keymap, keys: Sequence[str]) -> tuple[int, int] | None:
    """The modifiers' mask and the last key's evdev code of ``keys`` in ``keymap``; None
    where it lacks one of them."""
    *held, last = keys
    code = keymap.code(last)
    masks = [keymap.mask(MODIFIERS.get(name, "")) for name in held]
    if code is None or not all(masks):
        return None
    return functools.reduce(operator.or_, masks, 0), code


@contextlib.contextmanager
def _keyboard(
    env: Mapping[str, str], keys: Sequence[str], timeout: float
) -> Iterator[tuple[Connection, int, tuple[int, int]]]:
    """A virtual keyboard with a keymap that has ``keys``, and their chord in it."""
    try:
        connection = Connection(env, timeout)
    except WireError as exc:
        raise KeyboardError(str(exc)) from exc
    try:
        if MANAGER not in connection.globals:
            raise KeyboardError("the compositor offers no virtual keyboard")
        seat, keymap, chord = _keymap_with(connection, env, keys)
        manager = connection.bind(MANAGER, 1)
        keyboard = connection.new_object()  # ids are taken in the order they are sent
        connection.request(manager, _MANAGER_CREATE, uint(seat) + uint(keyboard))
        _upload(connection, keyboard, keymap.text)
        yield connection, keyboard, chord
        with contextlib.suppress(WireError):  # the keys arrived; closing ends it anyway
            connection.request(keyboard, _DESTROY)
            connection.roundtrip()
    except WireError as exc:
        raise KeyboardError(str(exc)) from exc
    finally:
        connection.close()


def _keymap_with(
    connection: Connection, env: Mapping[str, str], keys: Sequence[str]
) -> tuple[int, Keymap, tuple[int, int]]:
    """The seat, and the first keymap that has ``keys``: its keyboard's (the user's layout),
    else the compositor's default (a seat without a keyboard, or whose keyboard now is
    another program's virtual one, with only the keys that program typed)."""
    capabilities: list[int] = []

    def seat_event(opcode: int, reader: Reader) -> None:
        if opcode == _SEAT_CAPABILITIES:
            capabilities.append(reader.uint())

    seat = connection.bind("wl_seat", 1, seat_event)
    connection.roundtrip()

    def keymaps() -> Iterator[Keymap | None]:  # the default compiled only when needed
        if capabilities and capabilities[-1] & _CAN_KEYBOARD:
            yield _seat_keymap(connection, seat)
        yield _default_keymap(tuple(sorted(_xkb_names(env))))

    for keymap in keymaps():
        chord = None if keymap is None else chord_in(keymap, keys)
        if keymap is not None and chord is not None:
            return seat, keymap, chord
    raise KeyboardError(f"no keymap here has {'+'.join(keys)} (is libxkbcommon installed?)")


def _seat_keymap(connection: Connection, seat: int) -> Keymap | None:
    texts: list[bytes] = []

    def keyboard_event(opcode: int, reader: Reader) -> None:
        if opcode == _KEYBOARD_KEYMAP:
            kind, fd, size = reader.uint(), reader.fd(), reader.uint()
            try:
                if kind == _XKB_V1:
                    texts.append(os.pread(fd, size, 0))
            finally:
                os.close(fd)

    keyboard = connection.new_object(keyboard_event)
    connection.request(seat, _SEAT_GET_KEYBOARD, uint(keyboard))
    connection.roundtrip()
    return _parsed(texts[-1]) if texts else None


@functools.lru_cache(maxsize=4)
def _parsed(text: bytes) -> Keymap | None:
    return Keymap.parse(text)


def _xkb_names(env: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """The variables that name the default keymap, the cache's key."""
    return ((key, value) for key, value in env.items() if key.startswith("XKB_DEFAULT_"))


@functools.lru_cache(maxsize=2)
def _default_keymap(names: tuple[tuple[str, str], ...]) -> Keymap | None:
    return Keymap.default(dict(names))


def _upload(connection: Connection, keyboard: int, text: bytes) -> None:
    fd = os.memfd_create("voxtray-keymap", os.MFD_CLOEXEC)
    try:
        os.write(fd, text)
        connection.request(keyboard, _KEYMAP, uint(_XKB_V1) + uint(len(text)), fds=(fd,))
    finally:
        os.close(fd)


def _modifiers(connection: Connection, keyboard: int, depressed: int) -> None:
    connection.request(keyboard, _MODIFIERS, uint(depressed) + uint(0) + uint(0) + uint(0))


def _key(connection: Connection, keyboard: int, code: int, state: int) -> None:
    now = int(time.monotonic() * 1000) & 0xFFFFFFFF
    connection.request(keyboard, _KEY, uint(now) + uint(code) + uint(state))
