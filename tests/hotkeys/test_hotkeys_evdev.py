"""The evdev hotkey backend: kernel key codes to names, and recorded input events through
the combination tracker; the real listener where the machine has /dev/input and uinput."""

from __future__ import annotations

import os
import threading
import time

import pytest

from voxtray.hotkeys.base import ComboTracker
from voxtray.hotkeys.evdev_listener import GROUP_ADVICE, KEY_NAMES, EvdevBackend, feed, probe
from voxtray.hotkeys.keys import parse_hotkey

SYN, KEY, MSC = 0, 1, 4

# `evtest` on a laptop keyboard: ctrl+alt+space held long enough to auto-repeat, then
# released in another order than pressed. Scan codes (EV_MSC) and syncs come along.
CTRL_ALT_SPACE = [
    (MSC, 4, 29), (KEY, 29, 1), (SYN, 0, 0),
    (MSC, 4, 56), (KEY, 56, 1), (SYN, 0, 0),
    (MSC, 4, 57), (KEY, 57, 1), (SYN, 0, 0),
    (KEY, 57, 2), (SYN, 0, 0), (KEY, 57, 2), (SYN, 0, 0),
    (MSC, 4, 29), (KEY, 29, 0), (SYN, 0, 0),
    (MSC, 4, 57), (KEY, 57, 0), (SYN, 0, 0),
    (MSC, 4, 56), (KEY, 56, 0), (SYN, 0, 0),
]  # fmt: skip


class Calls:
    def __init__(self) -> None:
        self.log: list[str] = []

    def press(self) -> None:
        self.log.append("press")

    def release(self) -> None:
        self.log.append("release")


def tracker_for(hotkey: str, calls: Calls) -> ComboTracker:
    return ComboTracker(parse_hotkey(hotkey), calls.press, calls.release)


def test_kernel_codes_name_the_keys_hotkeys_use() -> None:
    expected = {29: "left_ctrl", 97: "right_ctrl", 56: "left_alt", 100: "right_alt",
                125: "left_super", 42: "left_shift", 57: "space", 30: "a", 44: "z",
                16: "q", 2: "1", 11: "0", 59: "f1", 68: "f10", 87: "f11", 194: "f24"}  # fmt: skip
    assert {code: KEY_NAMES[code] for code in expected} == expected
    for name in set(KEY_NAMES.values()):
        parse_hotkey(name)  # every name is one the hotkey parser knows


def test_recorded_combination_presses_and_releases_once() -> None:
    calls = Calls()
    feed(tracker_for("ctrl+alt+space", calls), CTRL_ALT_SPACE)
    assert calls.log == ["press", "release"]


def test_extra_modifier_does_not_fire_a_smaller_combination() -> None:
    calls = Calls()
    shift = [(KEY, 42, 1), *CTRL_ALT_SPACE, (KEY, 42, 0)]
    feed(tracker_for("ctrl+space", calls), shift)
    assert calls.log == []


def test_right_side_modifier_only_when_named() -> None:
    right_ctrl_space = [(KEY, 97, 1), (KEY, 57, 1), (KEY, 57, 0), (KEY, 97, 0)]
    calls = Calls()
    feed(tracker_for("ctrl+space", calls), right_ctrl_space)
    assert calls.log == ["press", "release"]
    calls = Calls()
    feed(tracker_for("left_ctrl+space", calls), right_ctrl_space)
    assert calls.log == []


def test_probe_reasons_name_the_fix() -> None:
    ok, why, _ = probe([], "linux")
    assert not ok
    assert "no /dev/input" in why
    ok, why, _ = probe(["/nonexistent/event0"], "linux")
    assert not ok
    assert GROUP_ADVICE in why
    ok, why, _ = probe(None, "win32")
    assert not ok
    assert "Linux" in why
    ok, why = EvdevBackend({}, "linux", paths=[]).available()
    assert not ok


def test_start_without_devices_is_a_one_line_error() -> None:
    backend = EvdevBackend({}, "linux", paths=["/nonexistent/event0"])
    with pytest.raises(Exception, match="input group"):
        backend.start(parse_hotkey("ctrl+space"), lambda: None, lambda: None)
    backend.stop()


def test_real_keyboard_through_uinput() -> None:
    if not os.path.exists("/dev/uinput") or not os.path.isdir("/dev/input"):
        pytest.skip("this machine has no /dev/input and no /dev/uinput to make a keyboard with")
    import evdev

    device = evdev.UInput(name="voxtray-test-keyboard")
    try:
        time.sleep(0.5)  # udev creates the event node
        backend = EvdevBackend()
        ok, why = backend.available()
        if not ok:
            pytest.skip(why)
        pressed, released = threading.Event(), threading.Event()
        backend.start(parse_hotkey("ctrl+alt+space"), pressed.set, released.set)
        try:
            for _, code, value in [e for e in CTRL_ALT_SPACE if e[0] == KEY]:
                device.write(KEY, code, value)
                device.syn()
            assert pressed.wait(5)
            assert released.wait(5)
        finally:
            backend.stop()
    finally:
        device.close()
