"""The dictation journal, alone and under the Qt-free `Dictation`: the real model, pipeline
and SQLite history, a fake sound device replaying a real clip, and real faults on the
history (another connection holding the database locked)."""

from __future__ import annotations

import sqlite3
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from app.choices import DictationState
from app.config import Settings
from app.dictation import Callbacks, Dictation
from app.evaluation.normalizer import normalize_english
from app.history import History
from app.journal import Journal
from app.models.store import ModelStore
from tests.conftest import ensure_installed, read_wav
from tests.test_dictation import CLIP, RecordingOutput, speak
from tests.test_microphone import FakeSoundDevice

BIRCH = "the birch canoe slid on the smooth planks"


def test_recording_is_private_appended_and_read_back(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal")
    recording = journal.begin(model="m")
    chunks = [np.full(320, i / 10, np.float32) for i in range(5)]
    for chunk in chunks:
        recording.append(chunk)
    assert recording.problem is None
    assert stat.S_IMODE(recording.audio_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(recording.note_path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "journal").stat().st_mode) == 0o700
    # Nothing was closed: what a killed process leaves behind.
    [left] = journal.unfinished()
    np.testing.assert_array_equal(left.audio(), np.concatenate(chunks))
    assert left.text is None
    assert left.note["model"] == "m"
    recording.update(text="hello", history_id=3)
    assert journal.unfinished()[0].text == "hello"
    recording.discard()
    assert journal.unfinished() == []
    assert list((tmp_path / "journal").iterdir()) == []


def test_a_write_cut_short_by_a_kill_reads_as_the_whole_samples(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    recording = journal.begin()
    recording.append(np.ones(10, np.float32))
    with recording.audio_path.open("ab") as raw:
        raw.write(b"\x00\x00")  # half a sample
    np.testing.assert_array_equal(journal.unfinished()[0].audio(), np.ones(10, np.float32))


def test_an_unwritable_journal_says_so_once_and_does_not_raise(tmp_path: Path) -> None:
    blocker = tmp_path / "journal"
    blocker.write_text("a file where the folder should be")
    recording = Journal(blocker).begin()
    recording.append(np.ones(10, np.float32))
    assert recording.problem is not None
    assert "cannot journal the dictation" in recording.problem
    assert "\n" not in recording.problem
    recording.discard()


@pytest.fixture
def store(model_store: ModelStore) -> ModelStore:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    return model_store


def _dictation(
    tmp_path: Path, store: ModelStore, output: RecordingOutput, warnings: list[str]
) -> tuple[Dictation, FakeSoundDevice]:
    fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=4.0)
    dictation = Dictation(
        store,
        History(tmp_path / "history.sqlite3"),
        Callbacks(warning=warnings.append),
        sd_module=fake,
        output_factory=lambda name: output,
    )
    dictation.load(Settings())
    return dictation, fake


def test_locked_history_types_the_text_and_stores_it_once_the_lock_goes(
    tmp_path: Path, store: ModelStore
) -> None:
    output, warnings = RecordingOutput(), []
    dictation, fake = _dictation(tmp_path, store, output, warnings)
    release = threading.Event()
    locked = threading.Event()

    def hold_lock() -> None:
        with sqlite3.connect(tmp_path / "history.sqlite3") as db:
            db.execute("BEGIN EXCLUSIVE")
            locked.set()
            release.wait(30)
            db.rollback()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(10)
        assert dictation.start()
        fake.streams[-1].wait_for(speak(fake, read_wav(CLIP)))
        began = time.monotonic()
        utterance = dictation.stop()
        assert time.monotonic() - began < 10
        assert utterance is not None
        assert normalize_english(utterance.text) == BIRCH
        assert output.typed == [utterance.text + " "]
        assert utterance.history_id is None
        assert utterance.store_error is not None
        assert "locked" in utterance.store_error
        assert dictation.state is DictationState.READY
        status = dictation.status()
        assert status["detail"].startswith("not saved to history")
        assert status["unstored"] == 1
        assert any("not saved to history" in w and "\n" not in w for w in warnings)
        [kept] = dictation.journal.unfinished()
        assert kept.text == utterance.text
        assert dictation.start()  # never stuck: the next dictation starts
        dictation.stop()
    finally:
        release.set()
        holder.join()
    assert dictation.retry_history() == 0
    entries = dictation.history.recent()
    assert [e.text for e in entries if e.text] == [utterance.text]
    assert entries[-1].delivered
    assert dictation.journal.unfinished() == []
    assert "unstored" not in dictation.status()
    dictation.close()


def test_a_dictation_cut_off_by_a_kill_is_recovered_at_the_next_load(
    tmp_path: Path, store: ModelStore
) -> None:
    # What a process killed while listening leaves: the audio so far, no text.
    journal = Journal(tmp_path / "journal")
    left = journal.begin(model="whisper")
    for start in range(0, (clip := read_wav(CLIP)).size, 320):
        left.append(clip[start : start + 320])
    # ... and one killed after typing, before the history write.
    typed = journal.begin(model="whisper")
    typed.append(np.zeros(1600, np.float32))
    typed.update(text="Already typed.", delivered=True)
    output, warnings = RecordingOutput(), []
    dictation, _ = _dictation(tmp_path, store, output, warnings)
    try:
        entries = {normalize_english(e.text): e for e in dictation.history.recent()}
        assert set(entries) == {BIRCH, "already typed"}
        assert all(e.recovered for e in entries.values())
        assert entries["already typed"].delivered
        assert not entries[BIRCH].delivered
        assert output.typed == []  # recovered text is not typed into whatever has focus
        assert journal.unfinished() == []
        assert any("recovered 2" in w for w in warnings)
        assert dictation.state is DictationState.READY
    finally:
        dictation.close()
    # Loading again finds nothing to recover and adds nothing.
    dictation, _ = _dictation(tmp_path, store, output, warnings)
    try:
        assert dictation.history.count() == 2
    finally:
        dictation.close()


def test_the_journal_of_a_finished_dictation_is_gone(tmp_path: Path, store: ModelStore) -> None:
    output, warnings = RecordingOutput(), []
    dictation, fake = _dictation(tmp_path, store, output, warnings)
    try:
        assert dictation.start()
        end = speak(fake, read_wav(CLIP))
        fake.streams[-1].wait_for(end)
        [during] = dictation.journal.unfinished()
        assert during.audio().size > 16000
        assert dictation.stop() is not None
        assert dictation.journal.unfinished() == []
        assert warnings == []
    finally:
        dictation.close()
