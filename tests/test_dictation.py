"""A whole dictation through the Qt-free core: a fake sound device replaying a real clip,
the real model, pipeline and history, and an output that records what it was asked to
type."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from app.choices import DictationState
from app.config import Settings
from app.desktop.session import DesktopSession
from app.dictation import Callbacks, Dictation
from app.evaluation.normalizer import normalize_english
from app.history import History
from app.models.store import ModelStore
from app.output.base import DeliveryError
from app.output.delivery import Delivery
from app.output.target import FocusTarget
from tests.conftest import EVAL_DIR, ensure_installed, read_wav
from tests.test_microphone import FakeSoundDevice

CLIP = EVAL_DIR / "wav" / "harvard_sb_example1.wav"


class RecordingOutput:
    """Records what it is asked to type; can fail, or stop after `stop_after` characters
    as a backend does when the target window closes mid-typing."""

    name = "recording"

    def __init__(self, fail: bool = False, stop_after: int | None = None) -> None:
        self.fail = fail
        self.stop_after = stop_after
        self.typed: list[str] = []
        self.targets: list[FocusTarget | None] = []

    def capture_target(self) -> FocusTarget:
        return FocusTarget.unknown(DesktopSession.from_env({}, "linux"))

    def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
        if self.fail:
            raise DeliveryError("the target window went away")
        self.targets.append(target)
        if self.stop_after is None:
            self.typed.append(text)
            return Delivery(text, text, "the test window", self.name)
        typed = text[: self.stop_after]
        self.typed.append(typed)
        rest = text[self.stop_after :]
        return Delivery(text, typed, "the test window", self.name, rest, "the window was closed")


def speak(fake: FakeSoundDevice, audio: np.ndarray) -> int:
    """Make the fake microphone 'hear' `audio` from now on; returns where it ends."""
    stream = fake.streams[-1]
    position = stream.hold()
    fake.audio = np.concatenate([fake.audio[:position], audio, np.zeros(16000 * 30, np.float32)])
    stream.resume()
    return position + audio.size


@pytest.fixture
def rig(tmp_path: Path, model_store: ModelStore) -> object:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    return tmp_path


def make(
    tmp_path: Path, store: ModelStore, output: RecordingOutput
) -> tuple[Dictation, FakeSoundDevice, list[str]]:
    states: list[str] = []
    fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=4.0)
    dictation = Dictation(
        store,
        History(tmp_path / "history.sqlite3"),
        Callbacks(state=lambda state, detail: states.append(state.value)),
        sd_module=fake,
        output_factory=lambda name: output,
    )
    dictation.load(Settings())
    return dictation, fake, states


def test_push_to_talk_types_the_words_and_keeps_history(rig: Path, model_store: ModelStore) -> None:
    output = RecordingOutput()
    dictation, fake, states = make(rig, model_store, output)
    try:
        assert dictation.state is DictationState.READY
        assert dictation.stop() is None  # not listening: nothing to stop
        clip = read_wav(CLIP)
        assert dictation.start()
        end = speak(fake, clip)
        fake.streams[-1].wait_for(end)
        utterance = dictation.stop()
        assert utterance is not None
        assert normalize_english(utterance.text) == "the birch canoe slid on the smooth planks"
        assert output.typed == [utterance.text + " "]
        entry = dictation.history.get(utterance.history_id)
        assert entry is not None
        assert entry.delivered
        assert entry.text == utterance.text
        for stage in ("mic_start", "vad", "stt", "release_to_text", "delivery", "total"):
            assert stage in utterance.timings_ms
        assert states[-3:] == ["listening", "transcribing", "ready"]
        assert dictation.status()["last"]["text"] == utterance.text
    finally:
        dictation.close()


def test_failed_delivery_loses_nothing(rig: Path, model_store: ModelStore) -> None:
    dictation, fake, _ = make(rig, model_store, RecordingOutput(fail=True))
    try:
        assert dictation.start()
        fake.streams[-1].wait_for(speak(fake, read_wav(CLIP)))
        utterance = dictation.stop()
        assert utterance is not None
        assert not utterance.delivered
        assert utterance.error == "the target window went away"
        entry = dictation.history.get(utterance.history_id)
        assert entry is not None
        assert entry.text == utterance.text != ""
        assert entry.delivery_error == "the target window went away"
        assert dictation.state is DictationState.READY
    finally:
        dictation.close()


def test_typing_cut_short_records_what_reached_the_window(
    rig: Path, model_store: ModelStore
) -> None:
    output = RecordingOutput(stop_after=9)
    dictation, fake, _ = make(rig, model_store, output)
    try:
        assert dictation.start()
        fake.streams[-1].wait_for(speak(fake, read_wav(CLIP)))
        utterance = dictation.stop()
        assert utterance is not None
        assert output.targets[0] is not None  # the window captured at start() was used
        assert utterance.partial
        assert not utterance.delivered
        assert utterance.error is not None
        assert "clipboard" in utterance.error
        entry = dictation.history.get(utterance.history_id)
        assert entry is not None
        assert not entry.delivered
        assert entry.delivered_text == utterance.text[:9]
        assert entry.delivery_target == "the test window"
    finally:
        dictation.close()


def test_words_spoken_as_the_key_goes_down_are_kept(rig: Path, model_store: ModelStore) -> None:
    """The speaker starts a moment before start() arrives: the pre-roll keeps it."""
    output = RecordingOutput()
    dictation, fake, _ = make(rig, model_store, output)
    try:
        clip = read_wav(CLIP)
        end = speak(fake, clip)
        fake.streams[-1].wait_for(end - clip.size + 16000 // 10)  # 100 ms already spoken
        assert dictation.start()
        fake.streams[-1].wait_for(end)
        utterance = dictation.stop()
        assert utterance is not None
        assert normalize_english(utterance.text).startswith("the birch canoe")
    finally:
        dictation.close()


def test_start_stop_is_thread_safe(rig: Path, model_store: ModelStore) -> None:
    dictation, _, _ = make(rig, model_store, RecordingOutput())
    try:
        results: list[bool] = []
        threads = [
            threading.Thread(target=lambda: results.append(dictation.start())) for _ in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results.count(True) == 1
        assert dictation.state is DictationState.LISTENING
        dictation.stop()
        assert dictation.state is DictationState.READY
    finally:
        dictation.close()
