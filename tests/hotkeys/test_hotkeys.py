"""Hotkeys: parsing, the combination logic, push-to-talk modes, the chooser, and real X11.

The X11 tests start their own Xvfb and drive it with xdotool (Debian: xvfb, xdotool).
"""

from __future__ import annotations

import glob
import importlib.util
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from tests.support.x11 import grabbed_by_another_client
from voxtray.choices import HotkeyBackend, HotkeyMode
from voxtray.desktop.session import DesktopSession
from voxtray.errors import ExitCode, VoxtrayError
from voxtray.hotkeys import (
    Hotkey,
    KeyboardBackend,
    NoBackend,
    PushToTalk,
    PynputBackend,
    check_conflicts,
    choose_backend,
    parse_hotkey,
    x11_grab_conflict,
)
from voxtray.hotkeys.base import ComboTracker
from voxtray.hotkeys.chooser import REGISTRY, auto_order
from voxtray.hotkeys.evdev_listener import EvdevBackend
from voxtray.hotkeys.pynput_listener import PynputNames, unblock_x11_listener

# --- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("ctrl+alt+space", "ctrl+alt+space"),
        ("Alt+Ctrl+Space", "ctrl+alt+space"),
        ("<ctrl>+<shift>+d", "ctrl+shift+d"),
        ("F9", "f9"),
        ("f24", "f24"),
        ("super+h", "super+h"),
        ("win+h", "super+h"),
        ("cmd+h", "super+h"),
        ("meta+h", "super+h"),
        ("control+option+a", "ctrl+alt+a"),
        ("right_ctrl", "right_ctrl"),
        ("Right Ctrl", "right_ctrl"),
        ("<ctrl_r>", "right_ctrl"),
        ("rctrl", "right_ctrl"),
        ("left_alt+x", "left_alt+x"),
        ("alt_gr", "right_alt"),
        ("alt+ctrl", "ctrl+alt"),
        ("ctrl + alt + 5", "ctrl+alt+5"),
        ("ctrl+return", "ctrl+enter"),
        ("escape", "esc"),
        ("shift+tab", "shift+tab"),
        ("ctrl+`", "ctrl+grave"),
        ("ctrl+-", "ctrl+minus"),
        ("page-up", "page_up"),
        ("cmd+shift+9", "shift+super+9"),
    ],
)
def test_parse_canonical(text: str, canonical: str) -> None:
    hotkey = parse_hotkey(text)
    assert str(hotkey) == canonical
    assert parse_hotkey(canonical) == hotkey


def test_parse_fields() -> None:
    assert parse_hotkey("ctrl+alt+space") == Hotkey(frozenset({"ctrl", "alt"}), "space")
    assert parse_hotkey("right_ctrl") == Hotkey(frozenset(), "right_ctrl")
    assert parse_hotkey("right_ctrl").modifier_only
    assert not parse_hotkey("ctrl+h").modifier_only
    # Modifier-only combos compare equal however they are written or built.
    assert parse_hotkey("alt+ctrl") == Hotkey(frozenset({"alt"}), "ctrl")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty hotkey"),
        ("   ", "empty hotkey"),
        ("ctrl+", "empty part"),
        ("ctrl++a", "empty part"),
        ("ctrl+foo", "unknown key 'foo'"),
        ("f25", "unknown key 'f25'"),
        ("f0", "unknown key 'f0'"),
        ("a+b", "2 non-modifier keys"),
        ("ctrl+alt+space+x", "2 non-modifier keys"),
        ("ctrl+control+a", "names ctrl more than once"),
        ("ctrl+right_ctrl+a", "names ctrl more than once"),
        ("<>", "empty part"),
    ],
)
def test_parse_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_hotkey(text)
    assert "\n" not in str(caught.value)


def test_hotkey_validates_direct_construction() -> None:
    with pytest.raises(ValueError, match="unknown key"):
        Hotkey(frozenset(), "nope")
    with pytest.raises(ValueError, match="not modifiers"):
        Hotkey(frozenset({"h"}), "j")
    with pytest.raises(ValueError, match="twice"):
        Hotkey(frozenset({"left_ctrl"}), "ctrl")


# --- combination logic, without a keyboard ----------------------------------------------------


class Recorder:
    """Collects on_press/on_release calls from a backend thread."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self._changed = threading.Condition()

    def on_press(self) -> None:
        self._add("press")

    def on_release(self) -> None:
        self._add("release")

    def _add(self, event: str) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float = 5.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.events) >= count, timeout)


def tracker(text: str) -> tuple[Any, Recorder]:
    recorder = Recorder()
    combo = ComboTracker(parse_hotkey(text), recorder.on_press, recorder.on_release)
    return combo, recorder


def test_tracker_press_once_release_on_any_key() -> None:
    combo, rec = tracker("ctrl+alt+h")
    for name in ("left_ctrl", "left_alt", "h", "h", "h"):
        combo.key_down(name)
    assert rec.events == ["press"]
    combo.key_up("left_alt")
    combo.key_up("h")
    combo.key_up("left_ctrl")
    assert rec.events == ["press", "release"]


def test_tracker_sides_and_extra_modifiers() -> None:
    combo, rec = tracker("ctrl+h")
    combo.key_down("right_ctrl")
    combo.key_down("left_shift")
    combo.key_down("h")
    assert rec.events == []  # ctrl+shift+h is another combination
    combo.key_up("left_shift")
    combo.key_up("h")
    combo.key_down("h")
    assert rec.events == ["press"]
    combo.key_down("left_ctrl")  # both ctrls: releasing one still leaves ctrl held
    combo.key_up("right_ctrl")
    assert rec.events == ["press"]
    combo.key_up("left_ctrl")
    assert rec.events == ["press", "release"]


def test_tracker_right_ctrl_only() -> None:
    combo, rec = tracker("right_ctrl")
    combo.key_down("left_ctrl")
    combo.key_up("left_ctrl")
    assert rec.events == []
    combo.key_down("right_ctrl")
    combo.key_down("c")  # another key while held does not release it
    combo.key_up("c")
    combo.key_up("right_ctrl")
    assert rec.events == ["press", "release"]


def test_tracker_ignores_keys_held_before_start_and_after_close() -> None:
    combo, rec = tracker("ctrl+h")
    combo.key_up("left_ctrl")  # a release never seen pressed
    combo.key_down("left_ctrl")
    combo.close()
    combo.key_down("h")
    assert rec.events == []


def test_tracker_survives_a_failing_callback() -> None:
    calls: list[str] = []

    def boom() -> None:
        calls.append("press")
        raise RuntimeError("bug in the app")

    combo = ComboTracker(parse_hotkey("f9"), boom, lambda: calls.append("release"))
    combo.key_down("f9")
    combo.key_up("f9")
    assert calls == ["press", "release"]


def fake_pynput() -> ModuleType:
    import enum

    class Key(enum.Enum):
        ctrl = 1
        ctrl_l = 1  # an alias, as on X11
        ctrl_r = 2
        cmd = 3
        space = 4

    module = ModuleType("fake_pynput_keyboard")
    module.Key = Key  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize(
    ("platform", "key", "name"),
    [
        ("linux", "ctrl", "left_ctrl"),
        ("linux", "ctrl_r", "right_ctrl"),
        ("linux", "cmd", "super"),
        ("linux", "space", "space"),
        ("linux", SimpleNamespace(vk=ord("H"), char="H"), "h"),
        ("linux", SimpleNamespace(vk=ord("!"), char="!"), "1"),  # shift+1
        ("linux", SimpleNamespace(vk=0xFE03, char=None), "right_alt"),  # ISO_Level3_Shift
        ("darwin", SimpleNamespace(vk=4, char="˙"), "h"),  # option+h on macOS
        ("darwin", SimpleNamespace(vk=50, char="`"), "grave"),
        ("win32", SimpleNamespace(vk=0x48, char="\x08"), "h"),  # ctrl+h on Windows
        ("linux", SimpleNamespace(vk=None, char="\x08"), "h"),
        ("linux", None, None),
    ],
)
def test_pynput_names(platform: str, key: Any, name: str | None) -> None:
    module = fake_pynput()
    if isinstance(key, str):
        key = module.Key[key]
    assert PynputNames(module, platform)(key) == name


# --- KeyboardBackend ---------------------------------------------------------------------


def _has_input_devices() -> bool:
    return sys.platform == "win32" or bool(glob.glob("/dev/input/event*"))


@pytest.mark.skipif(_has_input_devices(), reason="this machine has keyboard input devices")
def test_keyboard_backend_unavailable_here() -> None:
    ok, reason = KeyboardBackend().available()
    assert not ok
    assert "/dev/input" in reason or "root" in reason
    with pytest.raises(VoxtrayError, match="keyboard hotkeys unavailable"):
        KeyboardBackend().start(parse_hotkey("f9"), lambda: None, lambda: None)


@pytest.mark.skipif(_has_input_devices(), reason="this machine has keyboard input devices")
def test_keyboard_backend_real_hook_failure_is_a_voxtray_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("keyboard", reason="the keyboard package is not installed")
    # Past the availability check, the real keyboard.hook raises without input devices.
    monkeypatch.setattr(KeyboardBackend, "available", lambda self: (True, "forced"))
    with pytest.raises(VoxtrayError, match="could not hook the keyboard"):
        KeyboardBackend().start(parse_hotkey("f9"), lambda: None, lambda: None)


def test_keyboard_backend_with_a_fake_keyboard_module(monkeypatch: pytest.MonkeyPatch) -> None:
    hooks: list[Callable[[Any], None]] = []

    def hook(callback: Callable[[Any], None]) -> Callable[[Any], None]:
        hooks.append(callback)
        return callback

    fake = ModuleType("keyboard")
    fake.hook = hook  # type: ignore[attr-defined]
    fake.unhook = hooks.remove  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keyboard", fake)
    monkeypatch.setattr(KeyboardBackend, "available", lambda self: (True, "fake"))
    rec = Recorder()
    backend = KeyboardBackend()
    backend.start(parse_hotkey("ctrl+alt+h"), rec.on_press, rec.on_release)

    def send(kind: str, name: str) -> None:
        hooks[0](SimpleNamespace(event_type=kind, name=name))

    for name in ("ctrl", "alt", "h", "h", "h"):  # repeats of h are auto-repeat
        send("down", name)
    send("up", "H")
    send("up", "alt")
    assert rec.events == ["press", "release"]
    backend.stop()
    assert hooks == []

    backend.start(parse_hotkey("right_ctrl"), rec.on_press, rec.on_release)
    send("down", "ctrl")
    send("up", "ctrl")
    send("down", "right ctrl")
    send("up", "right ctrl")
    assert rec.events == ["press", "release", "press", "release"]
    backend.stop()


# --- PushToTalk --------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def ptt(mode: str) -> tuple[PushToTalk, list[str], FakeClock]:
    calls: list[str] = []
    clock = FakeClock()
    start, stop = (lambda: calls.append("start")), (lambda: calls.append("stop"))
    logic = PushToTalk(start, stop, mode, clock=clock)
    return logic, calls, clock


def test_ptt_hold() -> None:
    logic, calls, clock = ptt("hold")
    logic.pressed()
    assert calls == ["start"]
    assert logic.recording
    clock.now += 0.05  # even a short press stops on release
    logic.released()
    assert calls == ["start", "stop"]
    assert not logic.recording


def test_ptt_toggle() -> None:
    logic, calls, clock = ptt("toggle")
    logic.pressed()
    clock.now += 2
    logic.released()
    assert calls == ["start"]
    logic.pressed()
    logic.released()
    assert calls == ["start", "stop"]


def test_ptt_hold_or_tap_long_press_is_hold() -> None:
    logic, calls, clock = ptt("hold_or_tap")
    logic.pressed()
    clock.now += 0.31
    logic.released()
    assert calls == ["start", "stop"]


def test_ptt_hold_or_tap_quick_tap_toggles() -> None:
    logic, calls, clock = ptt("hold_or_tap")
    logic.pressed()
    clock.now += 0.1
    logic.released()
    assert calls == ["start"]
    assert logic.recording
    clock.now += 5
    logic.pressed()  # the next press stops, and its release (long or short) does nothing
    assert calls == ["start", "stop"]
    clock.now += 1
    logic.released()
    assert calls == ["start", "stop"]
    assert not logic.recording


@pytest.mark.parametrize(("held_s", "stopped"), [(0.29, False), (0.3, True), (0.31, True)])
def test_ptt_tap_threshold(held_s: float, stopped: bool) -> None:
    logic, calls, clock = ptt("hold_or_tap")
    clock.now = 0.0  # exact arithmetic at the boundary
    logic.pressed()
    clock.now = held_s
    logic.released()
    assert calls == (["start", "stop"] if stopped else ["start"])


@pytest.mark.parametrize("mode", ["hold", "toggle", "hold_or_tap"])
def test_ptt_repeated_presses_and_stray_releases_ignored(mode: str) -> None:
    logic, calls, clock = ptt(mode)
    logic.released()  # a release with no press
    for _ in range(5):
        logic.pressed()
        clock.now += 0.1
    assert calls == ["start"]
    clock.now += 1
    logic.released()
    logic.released()
    assert calls == (["start"] if mode == "toggle" else ["start", "stop"])


def test_ptt_reset_and_bad_mode() -> None:
    logic, calls, _ = ptt("toggle")
    logic.pressed()
    logic.reset()
    assert not logic.recording
    logic.pressed()
    assert calls == ["start", "start"]
    with pytest.raises(ValueError, match="push-to-talk mode 'sometimes': use hold, toggle"):
        PushToTalk(lambda: None, lambda: None, "sometimes")
    assert PushToTalk(lambda: None, lambda: None, "toggle").mode is HotkeyMode.TOGGLE


# --- choose_backend ----------------------------------------------------------------------


@pytest.fixture
def availability(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[bool, str]]:
    """Fake what each real backend reports; tests edit the dict."""
    table = {
        "pynput": (True, "fake pynput"),
        "keyboard": (False, "fake: no /dev/input"),
        "evdev": (False, "fake: not in the input group"),
    }
    for cls in (PynputBackend, KeyboardBackend, EvdevBackend):
        monkeypatch.setattr(cls, "available", lambda self: table[self.name])
    return table


@pytest.mark.parametrize(
    "env",
    [
        {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0", "XDG_SESSION_TYPE": "wayland"},
        {"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"},
        {"WAYLAND_DISPLAY": "wayland-1"},
    ],
)
def test_choose_wayland_without_input_access(
    availability: dict[str, tuple[bool, str]], env: dict[str, str]
) -> None:
    backend = choose_backend("auto", env, platform="linux")
    assert isinstance(backend, NoBackend)
    assert backend.name == "none"
    for text in ("Wayland", "voxtray toggle", "voxtray start", "voxtray stop", "no /dev/input"):
        assert text in backend.reason
    assert backend.available() == (True, backend.reason)


def test_choose_wayland_with_input_access(availability: dict[str, tuple[bool, str]]) -> None:
    availability["keyboard"] = (True, "root")
    assert choose_backend("auto", {"WAYLAND_DISPLAY": "w"}, platform="linux").name == "keyboard"
    availability["evdev"] = (True, "input group")
    assert choose_backend("auto", {"WAYLAND_DISPLAY": "w"}, platform="linux").name == "evdev"


@pytest.mark.parametrize(
    ("platform", "env", "name"),
    [
        ("linux", {"DISPLAY": ":0", "XDG_SESSION_TYPE": "x11"}, "pynput"),
        ("linux", {"DISPLAY": ":1"}, "pynput"),
        ("darwin", {}, "pynput"),
        ("darwin", {"WAYLAND_DISPLAY": "ignored"}, "pynput"),
        ("linux", {}, "none"),
    ],
)
def test_choose_by_platform(
    availability: dict[str, tuple[bool, str]], platform: str, env: dict[str, str], name: str
) -> None:
    assert choose_backend("auto", env, platform=platform).name == name


def test_choose_windows_prefers_keyboard(availability: dict[str, tuple[bool, str]]) -> None:
    availability["keyboard"] = (True, "hook")
    assert choose_backend("auto", {}, platform="win32").name == "keyboard"


def test_choose_x11_falls_back_then_gives_up(availability: dict[str, tuple[bool, str]]) -> None:
    availability["pynput"] = (False, "no RECORD")
    availability["keyboard"] = (True, "root")
    assert choose_backend(env={"DISPLAY": ":0"}, platform="linux").name == "keyboard"
    availability["keyboard"] = (False, "not root")
    backend = choose_backend(env={"DISPLAY": ":0"}, platform="linux")
    assert isinstance(backend, NoBackend)
    assert "pynput: no RECORD" in backend.reason
    assert "keyboard: not root" in backend.reason
    assert "voxtray toggle" in backend.reason


def test_choose_explicit(availability: dict[str, tuple[bool, str]]) -> None:
    assert choose_backend("pynput", {}, platform="linux").name == "pynput"
    assert choose_backend("none", {"DISPLAY": ":0"}).name == "none"
    with pytest.raises(VoxtrayError, match="fake: no /dev/input") as caught:
        choose_backend("keyboard", {"DISPLAY": ":0"})
    assert caught.value.exit_code == ExitCode.USAGE
    with pytest.raises(VoxtrayError, match="unknown hotkey backend 'xkb'"):
        choose_backend("xkb")


def test_backend_names_for_settings() -> None:
    from voxtray.hotkeys.portal_listener import PortalShortcutBackend

    names = {PynputBackend.name, KeyboardBackend.name, EvdevBackend.name, NoBackend.name}
    names.add(PortalShortcutBackend.name)
    assert names == set(HotkeyBackend) - {HotkeyBackend.AUTO}
    assert {entry.choice for entry in REGISTRY} == names


@pytest.mark.parametrize(
    ("platform", "env", "order"),
    [
        ("linux", {"DISPLAY": ":0"}, ["pynput", "keyboard", "evdev"]),
        ("linux", {"WAYLAND_DISPLAY": "w", "DISPLAY": ":0"}, ["evdev", "keyboard"]),
        ("linux", {}, ["evdev", "keyboard"]),
        (
            "linux",
            {"WAYLAND_DISPLAY": "w", "XDG_CURRENT_DESKTOP": "KDE"},
            ["evdev", "portal", "keyboard"],
        ),
        (
            "linux",
            {"WAYLAND_DISPLAY": "w", "XDG_CURRENT_DESKTOP": "ubuntu:GNOME"},
            ["evdev", "portal", "keyboard"],  # GNOME 48 binds for Voxtray's registered app ID
        ),
        ("linux", {"WAYLAND_DISPLAY": "w", "XDG_CURRENT_DESKTOP": "sway"}, ["evdev", "keyboard"]),
        (
            "linux",
            {"WAYLAND_DISPLAY": "w", "XDG_CURRENT_DESKTOP": "Hyprland"},
            ["evdev", "keyboard"],
        ),
        ("win32", {}, ["keyboard", "pynput"]),
        ("darwin", {"DISPLAY": ":0"}, ["pynput"]),
    ],
)
def test_auto_order(platform: str, env: dict[str, str], order: list[str]) -> None:
    assert auto_order(DesktopSession.from_env(env, platform)) == order


def test_backends_judge_the_env_they_are_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISPLAY", ":0")
    backend = PynputBackend({}, "linux")
    assert backend.available() == (False, "no X11 display (DISPLAY is not set)")
    assert KeyboardBackend({}, "darwin").available()[1].endswith("use pynput")


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="X11 check is Linux-only")
def test_pynput_unavailable_without_display(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    assert PynputBackend().available() == (False, "no X11 display (DISPLAY is not set)")
    monkeypatch.setenv("DISPLAY", ":12345")  # no such server
    ok, reason = PynputBackend().available()
    assert not ok
    assert reason


# --- conflicts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("super", "Activities"),
        ("right_super", "Activities"),
        ("alt+tab", "switches windows"),
        ("ctrl+alt+delete", "Windows"),
        ("ctrl+alt+t", "terminal"),
        ("print", "screenshot"),
        ("super+h", "voice typing"),
        ("ctrl+alt+f3", "console"),
        ("right_ctrl+alt+t", "terminal"),
        ("ctrl", "every ctrl shortcut"),
        ("left_alt", "every alt shortcut"),
        ("h", "while you type"),
        ("shift+a", "while you type"),
        ("space", "while you type"),
        ("ctrl+c", "application shortcut"),
    ],
)
def test_conflicts_warn(text: str, fragment: str) -> None:
    warning = check_conflicts(parse_hotkey(text))
    assert warning is not None
    assert fragment in warning
    assert "\n" not in warning


@pytest.mark.parametrize(
    "text", ["ctrl+alt+space", "right_ctrl", "f9", "ctrl+alt+h", "ctrl+shift+d", "page_up"]
)
def test_conflicts_free(text: str) -> None:
    assert check_conflicts(parse_hotkey(text)) is None


# --- real X11 on Xvfb --------------------------------------------------------------------


def xdo(*args: str) -> None:
    subprocess.run(["xdotool", *args], check=True, timeout=20)


@pytest.fixture
def started(x_display: str) -> Iterator[Callable[[str], tuple[PynputBackend, Recorder]]]:
    """Starts PynputBackends for hotkeys; stops them all afterwards."""
    backends: list[PynputBackend] = []

    def start(text: str) -> tuple[PynputBackend, Recorder]:
        backend, rec = PynputBackend(), Recorder()
        backend.start(parse_hotkey(text), rec.on_press, rec.on_release)
        backends.append(backend)
        return backend, rec

    yield start
    for backend in backends:
        listener = backend._listener
        backend.stop()
        assert listener is None or not listener.is_alive(), "the pynput thread outlived stop()"
    xdo("keyup", "ctrl", "alt", "shift", "h", "Control_R")  # nothing left held for the next test


class RawKeys:
    """A plain pynput listener counting presses per key, to see what X really sent."""

    def __init__(self) -> None:
        keyboard = importlib.import_module("pynput.keyboard")  # untyped; needs DISPLAY set
        self.presses: dict[str, int] = {}
        self._listener = keyboard.Listener(on_press=self._press)
        self._listener.start()
        self._listener.wait()

    def _press(self, key: Any) -> None:
        name = str(getattr(key, "char", None) or getattr(key, "name", key))
        self.presses[name] = self.presses.get(name, 0) + 1

    def stop(self) -> None:
        self._listener.stop()
        unblock_x11_listener(self._listener)
        self._listener.join(5)
        assert not self._listener.is_alive()


def test_pynput_available_on_xvfb(x_display: str) -> None:
    ok, reason = PynputBackend().available()
    assert ok, reason
    assert "RECORD" in reason


def test_xvfb_combo_press_then_release_once(started: Any) -> None:
    _, rec = started("ctrl+alt+h")
    xdo("keydown", "ctrl", "alt", "h")
    assert rec.wait_for(1), "on_press never fired"
    assert rec.events == ["press"]
    xdo("keyup", "h", "alt", "ctrl")
    assert rec.wait_for(2), "on_release never fired"
    # A second round proves nothing extra arrived in between (events come in order).
    xdo("keydown", "alt", "ctrl", "h")
    xdo("keyup", "ctrl", "h", "alt")
    assert rec.wait_for(4)
    assert rec.events == ["press", "release", "press", "release"]


def test_xvfb_modifier_only_right_ctrl(started: Any) -> None:
    _, rec = started("right_ctrl")
    xdo("keydown", "Control_L")  # the left ctrl alone must not fire
    xdo("keyup", "Control_L")
    # xdotool presses Control_L too for Control_R (it sets the Control modifier through
    # the modifier map's first key); ctrl is still the only modifier kind held.
    xdo("keydown", "Control_R")
    assert rec.wait_for(1)
    xdo("keyup", "Control_R")
    assert rec.wait_for(2)
    assert rec.events == ["press", "release"]


def test_xvfb_auto_repeat_does_not_press_again(started: Any) -> None:
    _, rec = started("ctrl+alt+h")
    raw = RawKeys()
    try:
        xdo("keydown", "ctrl", "alt", "h")
        time.sleep(1.5)  # past the X server's auto-repeat delay (660 ms by default)
        xdo("keyup", "h", "alt", "ctrl")
        assert rec.wait_for(2)
        time.sleep(0.3)
    finally:
        raw.stop()
    if raw.presses.get("h", 0) < 3:
        pytest.skip(f"the X server sent no auto-repeat (h pressed {raw.presses.get('h', 0)}x)")
    assert rec.events == ["press", "release"]


def test_xvfb_retapping_the_key_is_a_new_press(started: Any) -> None:
    # `xdotool key --repeat` sends real press/release pairs, not auto-repeat: each tap of h
    # with ctrl+alt held is the combination pressed again (hold_or_tap toggles on each).
    _, rec = started("ctrl+alt+h")
    xdo("keydown", "ctrl", "alt")
    xdo("key", "--repeat", "5", "--delay", "30", "h")
    xdo("keyup", "alt", "ctrl")
    assert rec.wait_for(10)
    assert rec.events == ["press", "release"] * 5


def test_xvfb_other_combinations_do_not_fire(started: Any) -> None:
    _, rec = started("ctrl+alt+h")
    for combo in ("h", "alt+h", "ctrl+h", "ctrl+alt+j", "ctrl+alt+shift+h", "super+h"):
        xdo("key", combo)
    xdo("key", "ctrl+alt+h")  # events arrive in order: anything above would come first
    assert rec.wait_for(2)
    assert rec.events == ["press", "release"]


def test_xvfb_stop_stops_events(started: Any) -> None:
    stopped, rec = started("ctrl+alt+h")
    _, witness = started("ctrl+alt+h")  # a second listener proves the keys were sent
    xdo("key", "ctrl+alt+h")
    assert rec.wait_for(2)
    assert witness.wait_for(2)
    stopped.stop()
    stopped.stop()  # twice is harmless
    xdo("key", "ctrl+alt+h")
    assert witness.wait_for(4)
    time.sleep(0.3)
    assert rec.events == ["press", "release"]
    stopped.start(parse_hotkey("ctrl+alt+h"), rec.on_press, rec.on_release)  # restartable
    xdo("key", "ctrl+alt+h")
    assert rec.wait_for(4)
    assert rec.events == ["press", "release"] * 2


def test_xvfb_grab_by_another_program(started: Any, x_display: str) -> None:
    hotkey = parse_hotkey("ctrl+alt+h")
    assert x11_grab_conflict(hotkey) is None
    with grabbed_by_another_client(x_display, "h"):
        warning = x11_grab_conflict(hotkey)
        assert warning is not None
        assert "already grabbed" in warning
        assert x11_grab_conflict(parse_hotkey("ctrl+shift+h")) is None
        # RECORD still sees the grabbed combination: both programs would react to it.
        _, rec = started("ctrl+alt+h")
        xdo("key", "ctrl+alt+h")
        assert rec.wait_for(2)
    assert x11_grab_conflict(hotkey) is None
