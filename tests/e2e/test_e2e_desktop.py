"""Voxtray end to end on a real desktop: an X server (Xvfb) with a real system tray
(trayer), a PulseAudio virtual microphone playing real speech, the real `voxtray` process,
and a real text window the words must be typed into. Driven once through
`voxtray start`/`voxtray stop` and once through clicks on the tray icon."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.audio import REPO, SPEECH_DIR
from tests.support.process import run_voxtray
from tests.support.pulse import virtual_microphone
from tests.support.recognition import SENTENCE_WER, assert_heard
from tests.support.tray_app import app_status, returning_home, running_tray_app, wait_for_state
from tests.support.waiting import settled_text, wait_for
from tests.support.x11 import (
    TargetWindow,
    tray_panel,
    windows,
    x_env,
    xdotool,
)
from voxtray.history.store import History
from voxtray.models.store import ModelStore

pytestmark = pytest.mark.slow

FIRST = (
    "ls_1089-134691-0001",
    "FOR A FULL HOUR HE HAD PACED UP AND DOWN WAITING BUT HE COULD WAIT NO LONGER",
)
SECOND = ("harvard_sb_example1", "THE BIRCH CANOE SLID ON THE SMOOTH PLANKS")


def typed_text(target: TargetWindow, timeout: float = 20.0) -> str:
    return settled_text(target.text, timeout)


def click_tray_icon(display: str) -> None:
    panel = tray_panel(display)
    assert panel is not None
    # The only icon fills the panel, which is as wide as its icons.
    x = panel["X"] + panel["WIDTH"] // 2
    y = panel["Y"] + panel["HEIGHT"] // 2
    xdotool(display, "mousemove", "--sync", str(x), str(y), "click", "1")


def test_dictation_lands_in_the_focused_window(
    desktop: str, tmp_path: Path, model_store: ModelStore
) -> None:
    home = returning_home(tmp_path, model_store, hud_enabled=True)
    with virtual_microphone() as mic:
        env = {**mic.env, **x_env(desktop), "VOXTRAY_HOME": str(home)}
        target = TargetWindow(desktop, tmp_path)
        try:
            with running_tray_app(env, tmp_path / "voxtray.log"):
                # A tray exists: the icon sits in trayer's panel and no fallback window shows.
                wait_for(
                    lambda: (tray_panel(desktop) or {"WIDTH": 0})["WIDTH"] >= 20,
                    10,
                    f"no tray icon in the panel: {windows(desktop, '--class', 'trayer')}",
                )
                named = windows(desktop, "--name", "^Voxtray$")
                assert named
                assert all(g["WIDTH"] <= 64 for g in named.values()), named

                target.focus()
                began = time.perf_counter()
                started = run_voxtray("start", env=env, timeout=30, cwd=REPO)
                start_s = time.perf_counter() - began
                assert started.returncode == 0, started.stderr
                assert app_status(env)["state"] == "listening"
                mic.play(SPEECH_DIR / "wav" / f"{FIRST[0]}.wav")
                began = time.perf_counter()
                stopped = run_voxtray("stop", env=env, timeout=30, cwd=REPO)
                stop_s = time.perf_counter() - began
                assert stopped.returncode == 0
                text = typed_text(target)
                assert_heard(FIRST[1], text, SENTENCE_WER)
                wait_for_state(env, "ready", 30)
                last = History(home / "history.sqlite3").recent(1)[0]
                assert last.text.strip() == text.strip()
                assert last.delivered
                print(
                    f"\nstart answered in {start_s * 1000:.0f} ms, stop in {stop_s * 1000:.0f} ms"
                )

                target.clear()
                target.focus()
                click_tray_icon(desktop)
                wait_for(
                    lambda: app_status(env)["state"] == "listening",
                    10,
                    "a tray click did not start dictation",
                )
                mic.play(SPEECH_DIR / "wav" / f"{SECOND[0]}.wav")
                click_tray_icon(desktop)
                text = typed_text(target)
                assert_heard(SECOND[1], text, SENTENCE_WER)
                wait_for_state(env, "ready", 30)
                assert History(home / "history.sqlite3").count() == 2
        finally:
            target.close()
    output = (tmp_path / "voxtray.log").read_text()
    assert "Traceback" not in output, output
    assert os.path.exists(home / "history.sqlite3")
