"""Wayland delivery logic: short text typed, long text pasted, and the copy-and-tell
fallback where nothing can type (the real tools run in tests/e2e/test_e2e_wayland.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from voxtray.choices import OutputMethod
from voxtray.output.base import DeliveryError
from voxtray.output.chooser import choose_output
from voxtray.output.copy_only import CopyOnlyOutput
from voxtray.output.delivery import Delivery
from voxtray.output.target import FocusTarget
from voxtray.output.typeorpaste import TYPE_BUDGET_MS, TypeOrPaste, should_paste, typing_ms


class Recorder:
    def __init__(self, name: OutputMethod) -> None:
        self.name = name
        self.texts: list[str] = []

    def available(self) -> bool:
        return True

    def problem(self) -> str | None:
        return None

    def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
        self.texts.append(text)
        return Delivery(text, text, "test window", str(self.name))


def fake_tools(folder: Path, *names: str) -> str:
    folder.mkdir(exist_ok=True)
    for name in names:
        tool = folder / name
        tool.write_text(f'#!/bin/sh\n/bin/cat > "{folder}/{name}.stdin"\n')
        tool.chmod(0o755)
    return str(folder)


def test_typing_is_kept_for_what_types_within_the_budget() -> None:
    assert typing_ms("x" * 12) <= TYPE_BUDGET_MS
    assert not should_paste("x" * 12)
    assert should_paste("x" * 13)
    assert should_paste("x" * 100)


def test_type_or_paste_dispatches_by_length() -> None:
    typer, paster = Recorder(OutputMethod.WTYPE), Recorder(OutputMethod.CLIPBOARD)
    output = TypeOrPaste(typer, paster)
    output.deliver("short")
    output.deliver("a dictation long enough to be pasted")
    assert typer.texts == ["short"]
    assert paster.texts == ["a dictation long enough to be pasted"]
    assert output.name is OutputMethod.WTYPE


def test_copy_only_puts_the_text_on_the_clipboard_and_says_so(tmp_path: Path) -> None:
    path = fake_tools(tmp_path / "bin", "wl-copy")
    env = {"WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "KDE", "PATH": path}
    output = CopyOnlyOutput(env, "linux")
    assert output.problem() is None
    with pytest.raises(DeliveryError) as caught:
        output.deliver("Grüße")
    message = str(caught.value)
    assert "\n" not in message
    for part in ("on KDE", "press Ctrl+V", "ydotool"):
        assert part in message
    assert (tmp_path / "bin" / "wl-copy.stdin").read_text(encoding="utf-8") == "Grüße"
    assert CopyOnlyOutput({"PATH": path}, "linux").problem() is not None


def test_auto_on_kde_copies_and_tells(tmp_path: Path) -> None:
    path = fake_tools(tmp_path / "bin", "wl-copy", "wl-paste", "wtype")
    env = {"WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "KDE", "PATH": path}
    assert isinstance(choose_output("auto", env, platform="linux"), CopyOnlyOutput)


def test_auto_on_wlroots_types_or_pastes(tmp_path: Path) -> None:
    path = fake_tools(tmp_path / "bin", "wl-copy", "wl-paste", "wtype")
    env = {"WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "sway", "PATH": path}
    assert isinstance(choose_output("auto", env, platform="linux"), TypeOrPaste)
    assert choose_output("wtype", env, platform="linux").name is OutputMethod.WTYPE
    assert not isinstance(choose_output("wtype", env, platform="linux"), TypeOrPaste)


class KeyRecorder(Recorder):
    def __init__(self, name: OutputMethod) -> None:
        super().__init__(name)
        self.keys: list[tuple[str, int]] = []

    def press_key(self, name: str, count: int = 1) -> None:
        self.keys.append((name, count))


def test_type_or_paste_presses_keys_through_the_typer() -> None:
    typer = KeyRecorder(OutputMethod.WTYPE)
    output = TypeOrPaste(typer, Recorder(OutputMethod.CLIPBOARD))
    output.press_key("BackSpace", 3)
    assert typer.keys == [("BackSpace", 3)]
    without = TypeOrPaste(Recorder(OutputMethod.WTYPE), Recorder(OutputMethod.CLIPBOARD))
    with pytest.raises(DeliveryError, match="cannot press keys"):
        without.press_key("Return")
