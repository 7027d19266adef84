"""Kept dictation audio beside files Voxtray did not make: a real dictation (the real model
and history, a fake sound device replaying a real clip) with a user's recording, a
folder named like a recording, or a linked folder of lectures in `history-audio`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.outputs import RecordingOutput, speak
from tests.support.sounddevice import FakeSoundDevice
from tests.support.waiting import wait_for
from voxtray.bench.wer import word_errors
from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.session import Dictation
from voxtray.history.audio import AUDIO_FOLDER
from voxtray.history.store import History
from voxtray.models.store import ModelStore

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"
SPOKEN = "the birch canoe slid on the smooth planks"
LONG_AGO = time.time() - 90 * 86400


def _heard(typed: str) -> bool:
    """Whether the typed text is the clip's, at most one word of eight wrong."""
    return word_errors(SPOKEN, typed).rate <= 0.125


def _aged(path: Path) -> Path:
    os.utime(path, (LONG_AGO, LONG_AGO), follow_symlinks=False)
    return path


class Rig:
    """A dictation loaded with 1 MB and 30 days of audio kept, its fake device and output."""

    def __init__(self, folder: Path, store: ModelStore, warnings: list[str]) -> None:
        self.output = RecordingOutput()
        self.fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=4.0)
        self.dictation = Dictation(
            store,
            History(folder / "history.sqlite3"),
            Callbacks(warning=warnings.append),
            sd_module=self.fake,
            output_factory=lambda name: self.output,
        )
        self.dictation.load(Settings(history_audio_mb=1, history_audio_days=30))

    def say_the_clip(self) -> str:
        """Dictate the clip once; what was typed."""
        typed = len(self.output.typed)
        assert self.dictation.start()
        self.fake.streams[-1].wait_for(speak(self.fake, read_wav(CLIP)))
        assert self.dictation.stop() is not None
        assert self.dictation.state is DictationState.READY
        return "".join(self.output.typed[typed:])


def _dictate(folder: Path, store: ModelStore, warnings: list[str]) -> tuple[Rig, str]:
    rig = Rig(folder, store, warnings)
    return rig, rig.say_the_clip()


def test_a_users_recording_survives_the_next_dictation(rig: Path, model_store: ModelStore) -> None:
    audio = rig / AUDIO_FOLDER
    audio.mkdir()
    interview = audio / "interview.wav"
    interview.write_bytes(b"RIFF" + bytes(2 * 1024 * 1024))  # older and over the limit
    _aged(interview)
    with History(rig / "history.sqlite3") as history:
        named = history.add("old", model="m", engine="e", provider="p", audio_s=1, timings={})
    (audio / f"{named}.wav").write_bytes(b"RIFF")
    _aged(audio / f"{named}.wav")
    dictating, typed = _dictate(rig, model_store, [])
    dictation = dictating.dictation
    try:
        assert _heard(typed)
        # The watcher prunes: the history's own old recording goes, the user's stays.
        wait_for(lambda: not (audio / f"{named}.wav").exists(), timeout=10)
        assert interview.stat().st_size == 4 + 2 * 1024 * 1024
        assert dictation.audio.has(dictation.history.recent(1)[0].id)
    finally:
        dictation.close()


def test_a_linked_audio_folder_of_lectures_is_left_alone(
    rig: Path, model_store: ModelStore
) -> None:
    lectures = rig / "lectures"
    lectures.mkdir()
    for name in ("monday.wav", "tuesday.wav", "wednesday.wav"):
        (lectures / name).write_bytes(b"RIFF" + bytes(1000))
        _aged(lectures / name)
    (rig / AUDIO_FOLDER).symlink_to(lectures)
    warnings: list[str] = []
    dictating, typed = _dictate(rig, model_store, warnings)
    dictation = dictating.dictation
    try:
        assert _heard(typed)
        time.sleep(1.5)  # three watcher rounds: time enough to prune, were it to
        assert sorted(os.listdir(lectures)) == ["monday.wav", "tuesday.wav", "wednesday.wav"]
        assert any("a link, not a folder of Voxtray's own" in line for line in warnings)
        told = len(warnings)
        assert _heard(dictating.say_the_clip())
        assert len(warnings) == told  # said once, not at every dictation
    finally:
        dictation.close()


@pytest.mark.parametrize("name", ["old.wav", "1.wav"])
def test_a_folder_named_like_a_recording_does_not_stop_the_text(
    rig: Path, model_store: ModelStore, name: str
) -> None:
    audio = rig / AUDIO_FOLDER
    audio.mkdir()
    (audio / name).mkdir(exist_ok=True)
    (audio / name / "inside.txt").write_text("the user's", encoding="utf-8")
    _aged(audio / name)
    dictating, typed = _dictate(rig, model_store, [])
    dictation = dictating.dictation
    try:
        assert _heard(typed)
        entry = dictation.history.recent(1)[0]
        assert entry.delivered
        time.sleep(1.5)
        assert (audio / name / "inside.txt").read_text(encoding="utf-8") == "the user's"
    finally:
        dictation.close()
