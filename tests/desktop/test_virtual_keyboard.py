"""The keymap side of pressing keys through the virtual-keyboard protocol: libxkbcommon's
default keymap (the one a compositor builds with no configuration), its keycodes and
modifier masks, a chord found in it, and the one-line refusals where there is no
compositor or no such key. Pressing them into real windows on sway is in
tests/e2e/test_virtual_keyboard_sway.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from voxtray.desktop import virtual_keyboard
from voxtray.desktop.virtual_keyboard import KeyboardError, chord_in
from voxtray.desktop.xkb import Keymap

US = {"XKB_DEFAULT_LAYOUT": "us"}
DE = {"XKB_DEFAULT_LAYOUT": "de"}


@pytest.fixture(scope="module")
def us() -> Keymap:
    keymap = Keymap.default(US)
    if keymap is None:
        pytest.skip("libxkbcommon or xkb-data is missing")
    return keymap


def test_the_default_keymap_puts_each_key_on_its_evdev_code(us: Keymap) -> None:
    # The kernel's codes (linux/input-event-codes.h): KEY_V 47, KEY_BACKSPACE 14,
    # KEY_ENTER 28, KEY_INSERT 110, KEY_LEFT 105.
    assert [us.code(name) for name in ("v", "BackSpace", "Return", "Insert", "Left")] == [
        47, 14, 28, 110, 105,
    ]  # fmt: skip
    assert us.mask("Shift") == 1
    assert us.mask("Control") == 4
    assert us.code("no-such-keysym") is None
    assert us.mask("NoSuchModifier") == 0
    assert us.text.startswith(b"xkb_keymap")
    assert us.text.endswith(b"\0")


def test_the_layout_decides_the_key() -> None:
    german = Keymap.default(DE)
    if german is None:
        pytest.skip("libxkbcommon or xkb-data is missing")
    assert german.code("z") == 21  # where the US layout has y
    assert german.code("y") == 44


def test_a_keymap_read_back_from_its_text_is_the_same(us: Keymap) -> None:
    again = Keymap.parse(us.text)
    assert again is not None
    assert again.codes == us.codes
    assert again.masks == us.masks
    assert Keymap.parse(b"xkb_keymap { this is not a keymap") is None


def test_a_chord_is_its_modifiers_mask_and_its_key(us: Keymap) -> None:
    assert chord_in(us, ("ctrl", "v")) == (4, 47)
    assert chord_in(us, ("ctrl", "shift", "v")) == (5, 47)
    assert chord_in(us, ("shift", "Insert")) == (1, 110)
    assert chord_in(us, ("BackSpace",)) == (0, 14)
    assert chord_in(us, ("hyper", "v")) is None  # not a modifier name it knows
    assert chord_in(us, ("ctrl", "no-such-keysym")) is None


def test_no_compositor_is_one_line(tmp_path: Path) -> None:
    env = {"WAYLAND_DISPLAY": "wayland-none", "XDG_RUNTIME_DIR": str(tmp_path)}
    assert not virtual_keyboard.offered(env)
    with pytest.raises(KeyboardError, match="cannot reach the compositor") as refused:
        virtual_keyboard.press(env, ("ctrl", "v"))
    assert "\n" not in str(refused.value)
    with pytest.raises(KeyboardError, match="no Wayland display"):
        virtual_keyboard.press({}, ("BackSpace",))
