"""Pieces of the output layer that need no desktop: planning, command lines, clipboard types."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from voxtray.desktop import xlib
from voxtray.output import (
    DeliveryError,
    binder,
    clipboard,
    create_output,
    selection,
    tools,
    wtype,
    ydotool,
)
from voxtray.output.binder import pack, plan_segments
from voxtray.output.clipboard import pick_target
from voxtray.output.wtype import WtypeOutput
from voxtray.output.ydotool import YdotoolOutput

WAYLAND = {"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland", "PATH": "/usr/bin"}


def ks(text: str) -> list[int]:
    return [xlib.char_keysym(char) for char in text]


def test_char_keysyms() -> None:
    assert xlib.char_keysym("a") == ord("a")
    assert xlib.char_keysym("é") == 0xE9  # Latin-1 keysyms are the code points
    assert xlib.char_keysym("—") == 0x1002014
    assert xlib.char_keysym("😀") == 0x101F600
    for char in "aé—Жß😀":
        assert xlib.keysym_char(xlib.char_keysym(char)) == char
    assert xlib.keysym_char(0xFF0D) is None  # Return
    assert xlib.is_control("\n")
    assert not xlib.is_control("\xa0")


def test_pack_pairs_capitals_with_their_letters() -> None:
    pairs = pack(ks("жЖé—Ё"))
    assert pairs[0] == tuple(ks("жЖ"))
    assert sorted(sym for pair in pairs for sym in pair if sym) == sorted(ks("жЖé—Ё"))
    assert len(pairs) == 3
    assert pack(ks("é")) == [(0xE9, 0)]
    assert pack(ks("ЖЖж")) == [tuple(ks("жЖ"))]


def test_plan_segments_respects_capacity() -> None:
    keys: list[int | None] = [
        None if char == "." else xlib.char_keysym(char) for char in "ab.cab.d"
    ]
    assert plan_segments(keys, 3) == [(0, 7, ks("abc")), (7, 8, ks("d"))]
    assert plan_segments(keys, 10) == [(0, 8, ks("abcd"))]
    assert plan_segments([None, None], 4) == [(0, 2, [])]
    # No spare keycodes at all: one run, which then stays unbound.
    assert plan_segments(keys, 0) == [(0, 8, ks("abcd"))]


def test_plan_segments_covers_the_text() -> None:
    text = "Съешь же ещё этих мягких французских булок"
    keys: list[int | None] = [None if char == " " else xlib.char_keysym(char) for char in text]
    runs = plan_segments(keys, 6)
    assert runs[0][0] == 0
    assert runs[-1][1] == len(text)
    assert all(end == start for (_, end, _), (start, _, _) in itertools.pairwise(runs))
    assert all(len(needed) <= 6 for _, _, needed in runs)


class Recorder:
    """Stands in for run_tool / run_daemonizing and keeps what they were asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], bytes | None, Mapping[str, str]]] = []

    def __call__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout: float,
        stdin: bytes | None = None,
    ) -> bytes:
        self.calls.append((list(args), stdin, env))
        return b""


class FakeOffer:
    """Stands in for the process that offers dictated text on the clipboard."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.pid = 0
        self.stopped = False

    def start(self, text: str) -> None:
        self.recorder.calls.append((["offer"], text.encode(), {}))

    def served(self) -> int:
        return 0

    def wait_served(self, count: int, timeout: float) -> bool:
        return True

    def stop(self, grace_s: float) -> None:
        self.stopped = True


@pytest.fixture(autouse=True)
def voxtray_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    for module in (wtype, ydotool, selection):
        monkeypatch.setattr(module, "run_tool", recorder)
    monkeypatch.setattr(selection, "run_daemonizing", recorder)
    monkeypatch.setattr(clipboard, "_WlCopyOffer", lambda env: FakeOffer(recorder))
    return recorder


def tools_found(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    monkeypatch.setattr(
        shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}" if name in names else None
    )


def test_wtype_types_from_stdin_under_utf8(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools_found(monkeypatch, "wtype")
    WtypeOutput({**WAYLAND, "LC_ALL": "C"}, "linux").deliver("Grüße 😀")
    args, stdin, env = recorder.calls[0]
    assert args == ["wtype", "-"]
    assert stdin == "Grüße 😀".encode()
    assert env["LC_ALL"] == "C.UTF-8"  # wtype decodes with mbstowcs
    # No compositor behind WAYLAND: no virtual keyboard of Voxtray's own, so wtype presses.
    WtypeOutput(WAYLAND, "linux").press_paste()
    assert recorder.calls[1][0] == ["wtype", "-M", "ctrl", "-k", "v", "-m", "ctrl"]
    WtypeOutput(WAYLAND, "linux").press_key("BackSpace", 2)
    assert recorder.calls[2][0] == ["wtype", "-k", "BackSpace", "-k", "BackSpace"]


def test_keys_sent_once_are_never_pressed_again_by_wtype(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compositor failed after the chord went out: pressed again through wtype it could
    paste twice or erase more, so it is a delivery error instead. Where nothing was sent,
    wtype presses it."""
    from voxtray.desktop import virtual_keyboard

    tools_found(monkeypatch, "wtype")

    def failed_midway(*_args: object, **_kwargs: object) -> None:
        raise virtual_keyboard.KeysSentError("the compositor failed as the keys were pressed")

    monkeypatch.setattr(virtual_keyboard, "press", failed_midway)
    with pytest.raises(DeliveryError, match="as the keys were pressed"):
        WtypeOutput(WAYLAND, "linux").press_paste()
    with pytest.raises(DeliveryError, match="as the keys were pressed"):
        WtypeOutput(WAYLAND, "linux").press_key("BackSpace", 3)
    assert recorder.calls == []

    def not_here(*_args: object, **_kwargs: object) -> None:
        raise virtual_keyboard.KeyboardError("the compositor offers no virtual keyboard")

    monkeypatch.setattr(virtual_keyboard, "press", not_here)
    WtypeOutput(WAYLAND, "linux").press_paste()
    assert recorder.calls[0][0] == ["wtype", "-M", "ctrl", "-k", "v", "-m", "ctrl"]


def test_ydotool_1x_command(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tools_found(monkeypatch, "ydotool", "ydotoold")
    socket = tmp_path / "sock"
    socket.touch()
    output = YdotoolOutput({**WAYLAND, "YDOTOOL_SOCKET": str(socket)}, "linux")
    output.deliver("hello, world")
    args, stdin, _ = recorder.calls[0]
    assert args == ["ydotool", "type", "--key-delay", "2", "--key-hold", "2", "--file", "-"]
    assert stdin == b"hello, world"
    assert output.paste_args() == ["ydotool", "key", "29:1", "47:1", "47:0", "29:0"]
    output.press_key("BackSpace", 2)
    assert recorder.calls[-1][0] == ["ydotool", "key", "--key-delay", "2", *["14:1", "14:0"] * 2]


def test_ydotool_0_1_command(recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    tools_found(monkeypatch, "ydotool")
    monkeypatch.setattr(os, "access", lambda path, mode: True)
    output = YdotoolOutput(WAYLAND, "linux")
    output.deliver("hello")
    assert recorder.calls[0][0] == ["ydotool", "type", "--key-delay", "2", "--file", "-"]
    assert output.paste_args() == ["ydotool", "key", "ctrl+v"]
    output.press_key("Return")
    assert recorder.calls[-1][0] == ["ydotool", "key", "Return"]


def test_ydotool_pastes_what_it_cannot_type(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tools_found(monkeypatch, "ydotool", "ydotoold", "wl-copy", "wl-paste")
    monkeypatch.setattr(clipboard, "WAYLAND_PASTE_SETTLE_S", 0.0)
    monkeypatch.setattr(selection, "read", lambda args, env: None)  # empty clipboard
    socket = tmp_path / "sock"
    socket.touch()
    create_output("ydotool", {**WAYLAND, "YDOTOOL_SOCKET": str(socket)}, platform="linux").deliver(
        "café"
    )
    commands = [call[0] for call in recorder.calls]
    assert commands == [
        ["offer"],
        ["ydotool", "key", "29:1", "47:1", "47:0", "29:0"],
        ["wl-copy", "--clear"],
    ]
    assert recorder.calls[0][1] == "café".encode()


def test_ydotool_alone_refuses_what_it_cannot_type(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tools_found(monkeypatch, "ydotool", "ydotoold", "wl-copy", "wl-paste")
    socket = tmp_path / "sock"
    socket.touch()
    with pytest.raises(DeliveryError, match="ydotool types ASCII only"):
        YdotoolOutput({**WAYLAND, "YDOTOOL_SOCKET": str(socket)}, "linux").deliver("café")
    assert recorder.calls == []


def test_clipboard_presses_paste_through_the_session_keys(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools_found(monkeypatch, "wtype", "ydotool", "wl-copy", "wl-paste")
    names = [sender.name for sender in clipboard.ClipboardOutput(WAYLAND, "linux").senders()]
    assert names == ["wtype", "ydotool"]
    only = clipboard.ClipboardOutput(WAYLAND, "linux", paste_keys="xdotool")
    assert only.senders() == []
    assert only.problem() == "nothing can press ctrl+v: no backend for it"


def test_wayland_clipboard_restored_when_paste_fails(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools_found(monkeypatch, "wtype", "wl-copy", "wl-paste")
    saved: dict[tuple[str, ...], bytes] = {
        ("wl-paste", "--list-types"): b"text/html\ntext/plain;charset=utf-8\n"
    }
    saved[("wl-paste", "--no-newline", "--type", "text/plain;charset=utf-8")] = b"mine"
    monkeypatch.setattr(selection, "read", lambda args, env: saved[tuple(args)])

    def broken() -> None:
        raise DeliveryError("wtype failed: simulated")

    monkeypatch.setattr(WtypeOutput, "press_paste", lambda self, chord: broken())
    with pytest.raises(DeliveryError, match="simulated"):
        clipboard.ClipboardOutput(WAYLAND, "linux").deliver("dictated")
    assert recorder.calls[-1][0] == ["wl-copy", "--type", "text/plain;charset=utf-8"]
    assert recorder.calls[-1][1] == b"mine"


def test_pick_target() -> None:
    assert pick_target(["TARGETS", "text/html", "UTF8_STRING", "STRING"]) == "UTF8_STRING"
    assert pick_target(["text/plain;charset=utf-8", "text/html"]) == "text/plain;charset=utf-8"
    assert pick_target(["TARGETS", "TIMESTAMP", "image/png"]) == "image/png"
    assert pick_target(["TARGETS", "TIMESTAMP"]) is None


def test_run_tool_failures_are_one_line(tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho 'first problem' >&2\necho 'second' >&2\nexit 3\n")
    script.chmod(0o755)
    with pytest.raises(DeliveryError, match=r"/tool failed: first problem$") as raised:
        tools.run_tool([str(script)], env={}, timeout=5)
    assert "\n" not in str(raised.value)
    with pytest.raises(DeliveryError, match="not found"):
        tools.run_tool([str(tmp_path / "absent")], env={}, timeout=5)


def test_binder_is_shared_per_display() -> None:
    assert binder.binder_for(":42") is binder.binder_for(":42")
    assert binder.binder_for(":42") is not binder.binder_for(":43")


def test_wtype_presses_named_keys(recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    tools_found(monkeypatch, "wtype")
    output = WtypeOutput(WAYLAND, "linux")
    output.press_key("BackSpace", 3)
    assert recorder.calls[-1][0] == ["wtype", *["-k", "BackSpace"] * 3]
