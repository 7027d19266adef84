"""The dictation journal, alone and under the Qt-free `Dictation`: the real model, pipeline
and SQLite history, a fake sound device replaying a real clip, and real faults on the
history (another connection holding the database locked)."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support.audio import CLIP, read_wav
from tests.support.database import database_locked
from tests.support.dictation_rig import MakeRig
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.dictation.journal import Journal, now_stamp, spare_folder


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


def test_text_is_kept_in_the_spare_folder_when_the_journal_cannot_take_it(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "journal"
    blocker.write_text("a file where the folder should be")
    spare = tmp_path / "runtime" / "voxtray" / "unsaved-x"
    journal = Journal(blocker, spare)
    kept = journal.keep_text({"started": now_stamp(), "text": "hello there", "delivered": True})
    assert kept is not None
    assert kept.parent == spare
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(spare.stat().st_mode) == 0o700
    [left] = journal.unfinished()
    assert (left.text, left.note["delivered"]) == ("hello there", True)
    assert left.audio().size == 0
    left.discard()
    assert journal.unfinished() == []
    assert Journal(blocker).keep_text({"text": "x"}) is None  # nowhere to go: says so


def test_kept_text_beside_audio_entries_comes_back_oldest_first(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal", tmp_path / "spare")
    first = journal.begin()
    first.append(np.ones(10, np.float32))
    kept = journal.keep_text({"text": "second"})
    assert kept is not None
    assert kept.parent == tmp_path / "journal"
    (tmp_path / "journal" / "20000101T000000000000Z-1-1.json").write_text("{}")  # no audio
    assert [entry.text for entry in journal.unfinished()] == [None, "second"]
    assert not (tmp_path / "journal" / "20000101T000000000000Z-1-1.json").exists()


def test_each_data_folder_has_its_own_spare_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert spare_folder(tmp_path / "a") is None  # no desktop session: no RAM folder
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    a, b = spare_folder(tmp_path / "a"), spare_folder(tmp_path / "b")
    assert a is not None
    assert b is not None
    assert a.parent == b.parent == tmp_path / "run" / "voxtray"
    assert a != b


def test_locked_history_types_the_text_and_stores_it_once_the_lock_goes(
    dictation_rig: MakeRig,
) -> None:
    rig = dictation_rig(settings=Settings())
    dictation, output, warnings = rig.dictation, rig.output, rig.warnings
    with database_locked(rig.history.path):
        assert dictation.start()
        rig.fake.streams[-1].wait_for(rig.speak())
        began = time.monotonic()
        utterance = dictation.stop()
        assert time.monotonic() - began < 10
        assert utterance is not None
        assert_heard(BIRCH, utterance.text, SENTENCE_WER)
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
    assert dictation.retry_history() == 0
    entries = dictation.history.recent()
    assert [e.text for e in entries if e.text] == [utterance.text]
    assert entries[-1].delivered
    assert dictation.journal.unfinished() == []
    assert "unstored" not in dictation.status()


def test_a_dictation_cut_off_by_a_kill_is_recovered_at_the_next_load(
    tmp_path: Path, dictation_rig: MakeRig
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
    history = tmp_path / "history.sqlite3"
    first = dictation_rig(history=history, settings=Settings())
    # The typed entry's text came with its journal note; the other was recognised now.
    entries = first.history.recent()
    [typed_entry] = [e for e in entries if e.text == "Already typed."]
    [heard_entry] = [e for e in entries if e.text != "Already typed."]
    assert_heard(BIRCH, heard_entry.text, SENTENCE_WER)
    assert typed_entry.recovered
    assert heard_entry.recovered
    assert typed_entry.delivered
    assert not heard_entry.delivered
    assert first.output.typed == []  # recovered text is not typed into whatever has focus
    assert journal.unfinished() == []
    assert any("recovered 2" in w for w in first.warnings)
    assert first.dictation.state is DictationState.READY
    first.close()
    # Loading again finds nothing to recover and adds nothing.
    again = dictation_rig(history=history, settings=Settings())
    assert again.history.count() == 2


def test_the_journal_of_a_finished_dictation_is_gone(dictation_rig: MakeRig) -> None:
    rig = dictation_rig(settings=Settings())
    dictation = rig.dictation
    assert dictation.start()
    rig.fake.streams[-1].wait_for(rig.speak())
    [during] = dictation.journal.unfinished()
    assert during.audio().size > 16000
    assert dictation.stop() is not None
    assert dictation.journal.unfinished() == []
    assert rig.warnings == []
