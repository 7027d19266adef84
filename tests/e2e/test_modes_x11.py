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
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.support import x11
from tests.support.atspi import GtkTarget
from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.models import ensure_installed
from tests.support.outputs import speak
from tests.support.process import stop_process
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.sounddevice import FakeSoundDevice
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.session import Dictation
from voxtray.history.store import History
from voxtray.models.store import ModelStore
from voxtray.modes import DEFAULT_MODES

pytestmark = pytest.mark.skipif(
    bool(x11.missing_tools()) or shutil.which("xterm") is None,
    reason=f"needs {', '.join(x11.missing_tools()) or 'xterm'} (packaging/dev.sh installs it)",
)

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"
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


def _steady(read: object, timeout: float = 10.0) -> str:
    """What ``read()`` returns once it has some text and stops changing for 0.5 s."""
    assert callable(read)
    deadline = time.monotonic() + timeout
    last, since = str(read()), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = str(read())
        if now != last:
            last, since = now, time.monotonic()
        elif now and time.monotonic() - since >= 0.5:
            break
    return last


def test_each_window_gets_its_modes_delivery(
    display: str, tmp_path: Path, model_store: ModelStore
) -> None:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    xterm = Xterm(display, tmp_path)
    qt = x11.TargetWindow(display, tmp_path)
    gtk = GtkTarget("editable", tmp_path, x11.x_env(display))
    warnings: list[str] = []
    fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=4.0)
    history = History(tmp_path / "history.sqlite3")
    dictation = Dictation(model_store, history, Callbacks(warning=warnings.append), sd_module=fake)
    try:
        dictation.load(Settings(modes=DEFAULT_MODES + NOTES_MODE))
        got: dict[str, tuple[str, str | None, str | None]] = {}
        for name, window, read in (
            ("xterm", xterm.window, xterm.text),
            ("qt", qt.window, qt.text),
            ("gtk", gtk.window, gtk.text),
        ):
            x11.xdotool(display, "windowfocus", "--sync", window)
            time.sleep(0.3)
            assert dictation.start()
            fake.streams[-1].wait_for(speak(fake, read_wav(CLIP)))
            utterance = dictation.stop()
            assert utterance is not None
            entry = history.get(utterance.history_id or 0)
            assert entry is not None
            got[name] = (_steady(read).strip(), utterance.mode, entry.mode)
    finally:
        dictation.close()
        for target in (xterm, gtk):
            target.close()
        stop_process(qt.proc)
    print({name: text for name, (text, _, _) in got.items()})
    assert [w for w in warnings if "mode" in w] == []

    terminal, mode, kept = got["xterm"]
    assert_heard(BIRCH, terminal, SENTENCE_WER)
    assert (mode or "").startswith("terminal (output type")
    assert kept == "terminal"
    assert not terminal.endswith(".")
    assert terminal[:1].isupper()

    notes, mode, kept = got["qt"]
    assert_heard(BIRCH, notes, SENTENCE_WER)
    assert (mode or "").startswith("notes")
    assert kept == "notes"
    assert notes[:1].islower()
    assert not notes.endswith(".")

    plain, mode, kept = got["gtk"]
    assert_heard(BIRCH, plain, SENTENCE_WER)
    assert (mode, kept) == (None, None)
    assert plain[:1].isupper()
    assert plain.endswith(".")
