"""The real tray app (`python -m voxtray` on Xvfb with trayer and a virtual microphone)
started on a settings.json that is no settings file, or that holds a value the settings
window would refuse: it reaches `ready`, says in one line what it ignored, and leaves what
the user had where it was."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.pulse import virtual_microphone
from tests.support.special_files import SAID, put_special
from tests.support.tray_app import app_status, returning_home, running_tray_app
from tests.support.x11 import x_env
from voxtray.models.store import ModelStore

pytestmark = pytest.mark.slow

VOCABULARY = "\n".join(f"Term{i}" for i in range(5001))


def _replaced(kind: str, path: Path) -> None:
    path.unlink()
    put_special(kind, path)


def _too_many_words(path: Path) -> None:
    chosen = json.loads(path.read_text())
    path.write_text(json.dumps({**chosen, "vocabulary": VOCABULARY, "sound_cues": False}))


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    **{
        kind: (lambda path, kind=kind: _replaced(kind, path), f"{SAID[kind]}; using defaults")
        for kind in ("fifo", "dev-zero")
    },
    "5001 vocabulary entries": (
        _too_many_words,
        "setting vocabulary must be at most 5000 words and names (it holds 5001); "
        "using its default; the file as it was is kept as",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=CASES.keys())
def test_the_app_reaches_ready_and_says_what_it_ignored(
    desktop: str, tmp_path: Path, model_store: ModelStore, case: str
) -> None:
    spoil, notice = CASES[case]
    home = returning_home(tmp_path, model_store)
    settings = home / "settings.json"
    spoil(settings)
    before = settings.lstat()
    log = tmp_path / "voxtray.log"
    with virtual_microphone() as mic:
        env = {**mic.env, **x_env(desktop), "VOXTRAY_HOME": str(home)}
        with running_tray_app(env, log):  # waits for `ready`
            assert app_status(env)["model"] == "whisper-tiny.en"
    lines = [line for line in log.read_text().splitlines() if notice in line]
    assert len(lines) == 1, log.read_text()
    assert lines[0].startswith("voxtray: ")
    after = settings.lstat()
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode)
    if case == "5001 vocabulary entries":
        kept = json.loads((home / "settings.json.bak").read_text())
        assert kept["vocabulary"] == VOCABULARY
        assert json.loads(settings.read_text())["vocabulary"] == VOCABULARY
