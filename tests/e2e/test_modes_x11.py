"""Modes for real on an X desktop (Xvfb): the Qt-free core dictates a real clip with the
real model and the real output (auto: xdotool) into three real windows, each focused as a
user would, and each window reads back what reached it:

- xterm running ``cat`` (the shipped terminal mode: typed key by key, no closing stop);
- the Qt text window, matched by its title by a mode the user added (no capital, no stop);
- a GTK window no mode names (the text as recognised).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import x11
from tests.support.atspi import GtkTarget
from tests.support.modes_rig import Window, assert_arrived, dictate_into
from tests.support.process import stop_process
from voxtray.config import Settings
from voxtray.history.store import History
from voxtray.models.store import ModelStore
from voxtray.modes import DEFAULT_MODES

pytestmark = pytest.mark.skipif(
    bool(x11.missing_tools()) or shutil.which("xterm") is None,
    reason=f"needs {', '.join(x11.missing_tools()) or 'xterm'} (packaging/dev.sh installs it)",
)

NOTES_MODE = f"notes: title={x11.TITLE} capitals=off period=off\n"


@pytest.fixture
def display(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = x11.XServer()
    try:
        monkeypatch.setenv("DISPLAY", server.name)
        monkeypatch.setenv("XDG_SESSION_TYPE", "x11")
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        yield server.name
    finally:
        server.stop()


class Xterm:
    """xterm running ``cat > FILE`` with echo off: the file holds what the terminal got."""

    TITLE = "voxtray-xterm-target"

    def __init__(self, display: str, workdir: Path) -> None:
        self.out = workdir / "xterm.txt"
        ready = workdir / "xterm.ready"
        script = f"stty -echo -icanon -iexten; : > {ready}; exec cat > {self.out}"
        self.proc = subprocess.Popen(
            ["xterm", "-T", self.TITLE, "-e", "sh", "-c", script],
            env=x11.x_env(display), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("xterm did not start")
            time.sleep(0.05)
        self.window = x11.xdotool(display, "search", "--sync", "--name", self.TITLE).split()[0]

    def text(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace") if self.out.exists() else ""

    def close(self) -> None:
        stop_process(self.proc)


def test_each_window_gets_its_modes_delivery(
    display: str, tmp_path: Path, model_store: ModelStore
) -> None:
    xterm = Xterm(display, tmp_path)
    qt = x11.TargetWindow(display, tmp_path)
    gtk = GtkTarget("editable", tmp_path, x11.x_env(display))

    def focus(window: str) -> Callable[[], None]:
        def run() -> None:
            x11.xdotool(display, "windowfocus", "--sync", window)

        return run

    windows = [
        Window("xterm", focus(xterm.window), xterm.text),
        Window("qt", focus(qt.window), qt.text),
        Window("gtk", focus(gtk.window), gtk.text),
    ]
    try:
        with History(tmp_path / "history.sqlite3") as history:
            settings = Settings(modes=DEFAULT_MODES + NOTES_MODE)
            got, warnings = dictate_into(model_store, history, settings, windows)
    finally:
        for target in (xterm, gtk):
            target.close()
        stop_process(qt.proc)
    print({name: arrived.text for name, arrived in got.items()})
    assert [w for w in warnings if "mode" in w] == []

    assert_arrived(got["xterm"], "terminal", capital=True, stop=False, said="terminal (output type")
    assert_arrived(got["qt"], "notes", capital=False, stop=False)
    assert_arrived(got["gtk"], None, capital=True, stop=True)
