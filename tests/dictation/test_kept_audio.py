"""Kept dictation audio beside files Voxtray did not make: a real dictation (the real model
and history, a fake sound device replaying a real clip) with a user's recording, a
folder named like a recording, or a linked folder of lectures in `history-audio`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.dictation_rig import DictationRig, MakeRig
from tests.support.waiting import wait_for
from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.history.audio import AUDIO_FOLDER
from voxtray.history.store import History
from voxtray.scoring.wer import word_errors

SPOKEN = "the birch canoe slid on the smooth planks"
LONG_AGO = time.time() - 90 * 86400


def _heard(typed: str) -> bool:
    """Whether the typed text is the clip's, at most one word of eight wrong."""
    return word_errors(SPOKEN, typed).rate <= 0.125


def _aged(path: Path) -> Path:
    os.utime(path, (LONG_AGO, LONG_AGO), follow_symlinks=False)
    return path


KEEPING = Settings(history_audio_mb=1, history_audio_days=30)
"""1 MB and 30 days of audio kept."""


def _say_the_clip(dictating: DictationRig) -> str:
    """Dictate the clip once; what was typed."""
    typed = len(dictating.output.typed)
    dictating.say()
    assert dictating.dictation.state is DictationState.READY
    return "".join(dictating.output.typed[typed:])


def test_a_users_recording_survives_the_next_dictation(
    tmp_path: Path, dictation_rig: MakeRig
) -> None:
    audio = tmp_path / AUDIO_FOLDER
    audio.mkdir()
    interview = audio / "interview.wav"
    interview.write_bytes(b"RIFF" + bytes(2 * 1024 * 1024))  # older and over the limit
    _aged(interview)
    with History(tmp_path / "history.sqlite3") as history:
        named = history.add("old", model="m", engine="e", provider="p", audio_s=1, timings={})
    (audio / f"{named}.wav").write_bytes(b"RIFF")
    _aged(audio / f"{named}.wav")
    dictating = dictation_rig(history=tmp_path / "history.sqlite3", settings=KEEPING)
    dictation = dictating.dictation
    assert _heard(_say_the_clip(dictating))
    # The watcher prunes: the history's own old recording goes, the user's stays.
    wait_for(lambda: not (audio / f"{named}.wav").exists(), timeout=10)
    assert interview.stat().st_size == 4 + 2 * 1024 * 1024
    assert dictation.audio.has(dictation.history.recent(1)[0].id)


def test_a_linked_audio_folder_of_lectures_is_left_alone(
    tmp_path: Path, dictation_rig: MakeRig
) -> None:
    lectures = tmp_path / "lectures"
    lectures.mkdir()
    for name in ("monday.wav", "tuesday.wav", "wednesday.wav"):
        (lectures / name).write_bytes(b"RIFF" + bytes(1000))
        _aged(lectures / name)
    (tmp_path / AUDIO_FOLDER).symlink_to(lectures)
    dictating = dictation_rig(history=tmp_path / "history.sqlite3", settings=KEEPING)
    warnings = dictating.warnings
    assert _heard(_say_the_clip(dictating))
    time.sleep(1.5)  # three watcher rounds: time enough to prune, were it to
    assert sorted(os.listdir(lectures)) == ["monday.wav", "tuesday.wav", "wednesday.wav"]
    assert any("a link, not a folder of Voxtray's own" in line for line in warnings)
    told = len(warnings)
    assert _heard(_say_the_clip(dictating))
    assert len(warnings) == told  # said once, not at every dictation


@pytest.mark.parametrize("name", ["old.wav", "1.wav"])
def test_a_folder_named_like_a_recording_does_not_stop_the_text(
    tmp_path: Path, dictation_rig: MakeRig, name: str
) -> None:
    audio = tmp_path / AUDIO_FOLDER
    audio.mkdir()
    (audio / name).mkdir(exist_ok=True)
    (audio / name / "inside.txt").write_text("the user's", encoding="utf-8")
    _aged(audio / name)
    dictating = dictation_rig(history=tmp_path / "history.sqlite3", settings=KEEPING)
    assert _heard(_say_the_clip(dictating))
    entry = dictating.history.recent(1)[0]
    assert entry.delivered
    time.sleep(1.5)
    assert (audio / name / "inside.txt").read_text(encoding="utf-8") == "the user's"
