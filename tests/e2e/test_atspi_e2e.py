"""The real `voxtray` app on Xvfb with a tray, the accessibility bus and a virtual
microphone: a dictation typed into a Qt window is read back, and `voxtray status --json`
says it was verified; the history keeps the outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import atspi as support
from tests.support.audio import CLIP, REPO
from tests.support.process import run_voxtray
from tests.support.pulse import virtual_microphone
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.tray_app import app_status, returning_home, running_tray_app
from tests.support.waiting import settled_text, wait_for
from tests.support.x11 import TargetWindow, x_env
from voxtray.history.store import History
from voxtray.models.store import ModelStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(support.missing()), reason=support.missing() or ""),
]


def test_status_says_the_dictation_was_verified(
    desktop: str, tmp_path: Path, model_store: ModelStore
) -> None:
    home = returning_home(tmp_path, model_store)
    with virtual_microphone() as mic, support.a11y_bus(x_env(desktop)) as bus_env:
        env = {**mic.env, **bus_env, "VOXTRAY_HOME": str(home)}
        target = TargetWindow(desktop, tmp_path, support.qt_env(bus_env))
        try:
            with running_tray_app(env, tmp_path / "voxtray.log"):
                target.focus()
                assert run_voxtray("start", env=env, timeout=30, cwd=REPO).returncode == 0
                mic.play(CLIP)
                assert run_voxtray("stop", env=env, timeout=30, cwd=REPO).returncode == 0
                text = settled_text(target.text, 20)
                assert_heard(BIRCH, text, SENTENCE_WER)
                wait_for(
                    lambda: app_status(env).get("last", {}).get("verified") == "verified",
                    10,
                    f"not verified: {app_status(env).get('last')}",
                )
            entry = History(home / "history.sqlite3").recent(1)[0]
            assert entry.verified == "verified"
            assert entry.delivered
        finally:
            target.close()
