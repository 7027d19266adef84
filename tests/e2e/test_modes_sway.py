"""Modes for real on headless sway: the Qt-free core dictates a real clip with the real model
and the output `auto` takes there (wtype, which pastes a sentence this long with Ctrl+V) into
three native Wayland windows, each focused through sway, each reading back what reached it:

- foot running ``cat`` (the shipped terminal mode: typed by wtype, never pasted: Ctrl+V is
  the byte 0x16 in a terminal);
- a GTK window, matched by its title by a mode the user added (typed, no capital, no stop:
  GTK 3 on headless sway 1.7 takes no paste, neither Ctrl+V nor Shift+Insert);
- the Qt text window no mode names (the text as recognised, pasted).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.atspi import GTK_TITLE, GtkTarget
from tests.support.modes_rig import Window, assert_arrived, dictate_into
from tests.support.native_targets import TerminalTarget
from tests.support.wayland import (
    WaylandDesktop,
    WaylandTarget,
    skip_without_tools,
    wayland_desktop,
)
from voxtray.config import Settings
from voxtray.history.store import History
from voxtray.models.store import ModelStore
from voxtray.modes import DEFAULT_MODES

pytestmark = pytest.mark.wayland

NOTES_MODE = f"notes: title={GTK_TITLE} output=type capitals=off period=off\n"


@pytest.fixture
def sway(monkeypatch: pytest.MonkeyPatch) -> Iterator[WaylandDesktop]:
    skip_without_tools()
    with wayland_desktop() as desktop:
        for key, value in desktop.env().items():  # Voxtray as the session starts it
            monkeypatch.setenv(key, value)
        for key in ("DISPLAY", "QT_QPA_PLATFORM"):
            monkeypatch.delenv(key, raising=False)
        yield desktop


def _focus_pid(sway: WaylandDesktop, pid: int) -> Callable[[], None]:
    def focus() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            node = next((w for w in sway.windows() if w.get("pid") == pid), None)
            if node is not None:
                sway.swaymsg(f"[con_id={node['id']}]", "focus")
                return
            time.sleep(0.05)
        raise RuntimeError(f"no sway window for process {pid}")

    return focus


def test_each_window_gets_its_modes_delivery(
    sway: WaylandDesktop, tmp_path: Path, model_store: ModelStore
) -> None:
    terminal = TerminalTarget(sway.env(), tmp_path)
    qt = WaylandTarget(sway, tmp_path)
    gtk = GtkTarget("editable", tmp_path, sway.env())
    windows = [
        Window("foot", _focus_pid(sway, terminal.proc.pid), terminal.text),
        Window("qt", qt.focus, qt.text),
        Window("gtk", _focus_pid(sway, gtk.proc.pid), gtk.text),
    ]
    try:
        with History(tmp_path / "history.sqlite3") as history:
            settings = Settings(modes=DEFAULT_MODES + NOTES_MODE)
            got, warnings = dictate_into(model_store, history, settings, windows)
    finally:
        terminal.close()
        gtk.close()
        qt.close()
    print({name: arrived.text for name, arrived in got.items()})
    assert [w for w in warnings if "mode" in w] == []

    assert_arrived(got["foot"], "terminal", capital=True, stop=False, said="terminal (output type")
    assert_arrived(got["gtk"], "notes", capital=False, stop=False)
    assert_arrived(got["qt"], None, capital=True, stop=True)


def test_a_terminal_mode_with_its_paste_keys_pastes_into_foot(
    sway: WaylandDesktop, tmp_path: Path, model_store: ModelStore
) -> None:
    """A user's terminal mode that pastes with Ctrl+Shift+V (foot's paste keys): the whole
    sentence arrives through the clipboard, where Ctrl+V would have typed the byte 0x16."""
    terminal = TerminalTarget(sway.env(), tmp_path)
    foot = Window("foot", _focus_pid(sway, terminal.proc.pid), terminal.text)
    modes = "shell: app=foot output=clipboard paste=ctrl+shift+v period=off\n"
    try:
        with History(tmp_path / "history.sqlite3") as history:
            got, warnings = dictate_into(model_store, history, Settings(modes=modes), [foot])
    finally:
        terminal.close()
    print(got["foot"].text)
    assert [w for w in warnings if "mode" in w] == []
    assert_arrived(got["foot"], "shell", capital=True, stop=False, said="shell (output clipboard")
