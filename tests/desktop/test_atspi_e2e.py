"""The real `voxtray` app on Xvfb with a tray, the accessibility bus and a virtual
microphone: a dictation typed into a Qt window is read back, and `voxtray status --json`
says it was verified; the history keeps the outcome."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import atspi as support
from tests.support.audio import REPO, SPEECH_DIR
from tests.support.models import ensure_installed
from tests.support.process import run_voxtray
from tests.support.pulse import virtual_microphone
from tests.support.waiting import settled_text, wait_for
from tests.support.x11 import TargetWindow, x_env
from voxtray.history.store import History
from voxtray.models.store import ModelStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(support.missing()), reason=support.missing() or ""),
]

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"


def status(env: dict[str, str]) -> dict[str, Any]:
    done = run_voxtray("status", "--json", env=env, timeout=30, cwd=REPO)
    return json.loads(done.stdout) if done.returncode == 0 else {"state": "down"}


def test_status_says_the_dictation_was_verified(
    desktop: str, tmp_path: Path, model_store: ModelStore
) -> None:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    home = tmp_path / "home"
    home.mkdir()
    (home / "models").symlink_to(model_store.root, target_is_directory=True)
    (home / "settings.json").write_text(
        json.dumps({"hotkey_backend": "none", "first_run_done": True})
    )
    with virtual_microphone() as mic, support.a11y_bus(x_env(desktop)) as bus_env:
        env = {**mic.env, **bus_env, "VOXTRAY_HOME": str(home)}
        target = TargetWindow(desktop, tmp_path, support.qt_env(bus_env))
        log = (tmp_path / "voxtray.log").open("w")
        app = subprocess.Popen(
            [sys.executable, "-m", "voxtray"], env=env, stdout=log, stderr=log, cwd=REPO
        )
        try:
            wait_for(lambda: status(env)["state"] == "ready", 180, "voxtray never became ready")
            target.focus()
            assert run_voxtray("start", env=env, timeout=30, cwd=REPO).returncode == 0
            mic.play(CLIP)
            assert run_voxtray("stop", env=env, timeout=30, cwd=REPO).returncode == 0
            text = settled_text(target.text, 20)
            assert "canoe" in text.lower()
            wait_for(
                lambda: status(env).get("last", {}).get("verified") == "verified",
                10,
                f"not verified: {status(env).get('last')}",
            )
            entry = History(home / "history.sqlite3").recent(1)[0]
            assert entry.verified == "verified"
            assert entry.delivered
        finally:
            run_voxtray("quit", env=env, timeout=30, cwd=REPO)
            try:
                app.wait(timeout=15)
            except subprocess.TimeoutExpired:
                app.kill()
            target.close()
            log.close()
