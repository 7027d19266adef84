"""The History window, offscreen: search, copy, delete with its audio, export, corrections,
re-runs shown against their original, and the keyboard."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QCheckBox,
    QComboBox,
    QLabel,
    QLineEdit,
    QWidget,
)

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.outputs import speak
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from voxtray.control.server import send
from voxtray.history.audio import AudioArchive
from voxtray.history.export import ExportFormat
from voxtray.history.store import History
from voxtray.scoring.wer import word_errors
from voxtray.ui.history_window import COLUMNS, HistoryWindow, Learn

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    with History(tmp_path / "history.sqlite3") as opened:
        yield opened


@pytest.fixture
def audio(tmp_path: Path) -> AudioArchive:
    return AudioArchive(tmp_path / "audio")


def _add(history: History, text: str, **extra: Any) -> int:
    return history.add(
        text,
        model="whisper-tiny.en",
        engine="ort",
        provider="cpu",
        audio_s=2.0,
        timings={"release_to_text": 120.0},
        **extra,
    )


@pytest.fixture
def window(qtbot: Any, history: History, audio: AudioArchive) -> HistoryWindow:
    first = _add(history, "Send the report to Jon")
    history.mark_delivered(first)
    _add(history, "")
    _add(history, "The weather is fine today")
    audio.store(first, np.full(1600, 0.1, dtype=np.float32))
    shown = HistoryWindow(history, audio, (200, 30))
    qtbot.addWidget(shown)
    shown.show()
    qtbot.waitExposed(shown)
    return shown


def _texts(window: HistoryWindow) -> list[str]:
    return [entry.text for entry in window.entries]


def _select(window: HistoryWindow, text: str) -> int:
    entry_id = window.entries[_texts(window).index(text)].id
    window.select_id(entry_id)
    return entry_id


def test_lists_newest_first_with_every_column(window: HistoryWindow) -> None:
    assert _texts(window) == ["The weather is fine today", "Send the report to Jon"]
    row = [window.table.item(1, c).text() for c in range(window.table.columnCount())]
    assert list(COLUMNS[:3]) == ["Text", "Mode", "Clean-up"]
    assert row[:3] == ["Send the report to Jon", "", ""]  # the text first; no mode, no clean-up
    assert row[5:] == ["2.0 s", "whisper-tiny.en", "cpu (ort)", "120 ms", "yes"]
    assert "30 days" in window.retention.text()
    assert "200 MB" in window.retention.text()


def test_search_is_instant_and_empty_shown_on_request(qtbot: Any, window: HistoryWindow) -> None:
    qtbot.keyClicks(window.search, "repo")
    qtbot.waitUntil(lambda: _texts(window) == ["Send the report to Jon"])
    window.search.clear()
    qtbot.waitUntil(lambda: len(window.entries) == 2)
    window.show_empty.setChecked(True)
    assert len(window.entries) == 3


def test_copy_says_copied(qtbot: Any, window: HistoryWindow) -> None:
    _select(window, "Send the report to Jon")
    window.table.setFocus()
    qtbot.keyClick(window.table, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    clipboard = QGuiApplication.clipboard()
    assert clipboard is not None
    assert clipboard.text() == "Send the report to Jon"
    assert window.status.text() == "Copied"


def test_delete_key_removes_entry_and_its_audio(
    qtbot: Any, window: HistoryWindow, history: History, audio: AudioArchive
) -> None:
    questions: list[str] = []
    window.confirm = lambda question: questions.append(question) is None
    entry_id = _select(window, "Send the report to Jon")
    assert audio.has(entry_id)
    assert window.play_button.isEnabled()
    window.table.setFocus()
    qtbot.keyClick(window.table, Qt.Key.Key_Delete)
    assert questions == ["Delete this dictation and the audio kept with it?"]
    assert history.get(entry_id) is None
    assert not audio.has(entry_id)
    assert _texts(window) == ["The weather is fine today"]


def test_declined_delete_keeps_everything(window: HistoryWindow, history: History) -> None:
    window.confirm = lambda _question: False
    entry_id = _select(window, "Send the report to Jon")
    window.delete_button.click()
    assert history.get(entry_id) is not None


@pytest.mark.parametrize("fmt", list(ExportFormat))
def test_export_selection_or_all_parses(
    window: HistoryWindow, tmp_path: Path, fmt: ExportFormat
) -> None:
    path = tmp_path / f"out.{fmt.value}"
    window.ask_export = lambda: (path, fmt)
    window.table.clearSelection()
    window.export_button.click()  # nothing selected: all listed
    text = path.read_text(encoding="utf-8")
    if fmt is ExportFormat.JSON:
        assert [row["text"] for row in json.loads(text)] == [
            "Send the report to Jon",
            "The weather is fine today",
        ]
    elif fmt is ExportFormat.CSV:
        rows = list(csv.DictReader(io.StringIO(text)))
        assert [row["text"] for row in rows] == [
            "Send the report to Jon",
            "The weather is fine today",
        ]
        assert rows[0]["release_to_text_ms"] == "120.0"
    elif fmt is ExportFormat.SRT:
        assert text.startswith("1\n00:00:00,000 --> 00:00:02,000\nSend the report to Jon\n")
        assert "2\n00:00:02,000 --> 00:00:04,000\nThe weather is fine today" in text
    else:
        assert text == "Send the report to Jon\nThe weather is fine today\n"
    _select(window, "The weather is fine today")
    window.export_button.click()
    assert "report" not in path.read_text(encoding="utf-8")


def test_editing_offers_the_correction(qtbot: Any, window: HistoryWindow) -> None:
    offered: list[tuple[str, str]] = []
    window.ask_learn = lambda heard, meant: offered.append((heard, meant)) or Learn.VOCABULARY
    _select(window, "Send the report to Jon")
    window.text.setPlainText("Send the report to Jean")
    with qtbot.waitSignal(window.learn_requested) as learned:
        window.save_button.click()
    assert offered == [("Jon", "Jean")]
    assert learned.args == [Learn.VOCABULARY, "Jon", "Jean"]
    assert "Send the report to Jean" in _texts(window)
    window.search.setText("jean")
    qtbot.waitUntil(lambda: _texts(window) == ["Send the report to Jean"])


def test_a_rerun_shows_the_difference_from_its_original(
    window: HistoryWindow, history: History
) -> None:
    original = _texts(window).index("Send the report to Jon")
    rerun = _add(history, "Send the report to Jean", rerun_of=window.entries[original].id)
    window.rerun_done(rerun)
    assert window.current() is not None
    assert window.difference.text().startswith("Re-run of #")
    assert "<s>Jon</s>" in window.difference.text()
    assert "<b>Jean</b>" in window.difference.text()


def test_play_hands_the_kept_audio_to_the_player(qtbot: Any, window: HistoryWindow) -> None:
    played: list[int] = []

    class Player:
        def play(self, data: np.ndarray, samplerate: int) -> None:
            played.append(len(data))

        def wait(self) -> None:
            pass

        def stop(self) -> None:
            pass

    window.player = Player()
    _select(window, "Send the report to Jon")
    window.play_button.click()
    qtbot.waitUntil(lambda: played == [1600])


def test_keyboard_reaches_every_control_and_each_has_a_name(
    qtbot: Any, window: HistoryWindow
) -> None:
    _select(window, "Send the report to Jon")  # enables the actions
    controls = [
        w
        for w in window.findChildren(QWidget)
        if isinstance(w, QAbstractButton | QLineEdit | QCheckBox | QComboBox)
        or w in (window.table, window.text)
    ]
    controls = [w for w in controls if w.isVisibleTo(window) and w.parent() is not None]
    controls = [w for w in controls if w.focusPolicy() & Qt.FocusPolicy.TabFocus]
    assert not window.raw_button.isEnabled()  # no clean-up ran: the text is as said
    controls = [w for w in controls if w.isEnabled()]
    for control in controls:
        assert control.accessibleName(), control
    window.search.setFocus()
    reached: set[QWidget] = set()
    for _ in range(len(controls) * 2):
        focused = QApplication.focusWidget()
        if focused is not None:
            reached.add(focused)
        qtbot.keyClick(focused or window, Qt.Key.Key_Tab)
    assert len(controls) >= 14
    missing = [c.accessibleName() for c in controls if c not in reached]
    assert missing == []


def test_mnemonics_are_unique(window: HistoryWindow) -> None:
    texts = [b.text() for b in window.findChildren(QAbstractButton)]
    texts += [label.text() for label in window.findChildren(QLabel) if label.buddy() is not None]
    keys = [text[text.index("&") + 1].lower() for text in texts if "&" in text]
    assert len(keys) >= 14
    assert len(keys) == len(set(keys)), keys


def test_shortcuts_find_and_escape(qtbot: Any, window: HistoryWindow) -> None:
    window.table.setFocus()
    qtbot.keyClick(window.table, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is window.search
    qtbot.keyClick(window.search, Qt.Key.Key_Escape)
    assert not window.isVisible()


def test_the_app_opens_one_window_for_a_real_dictation(qtbot: Any, voxtray: Any) -> None:
    assert send("start")["state"] == "listening"
    voxtray.fake.streams[-1].wait_for(speak(voxtray.fake, read_wav(CLIP)))
    with qtbot.waitSignal(voxtray.worker.utterance, timeout=60_000) as said:
        send("stop")
    qtbot.waitUntil(lambda: send("status")["state"] == "ready")
    send("history")  # what `voxtray history` sends
    qtbot.waitUntil(
        lambda: voxtray.histories.window is not None and voxtray.histories.window.isVisible()
    )
    window: HistoryWindow = voxtray.histories.window
    voxtray.menu.history_requested.emit()  # the tray's History…: the same window, raised
    assert voxtray.histories.window is window
    assert _texts(window) == [said.args[0].text]
    assert window.table.item(0, 4).text() == "the test window"
    assert window.current() == window.entries[0]  # the newest, selected on opening
    window.choose_row(0)
    assert window.play_button.isEnabled()
    with qtbot.waitSignal(voxtray.reports.rerun_done, timeout=60_000):
        window.rerun_button.click()
    qtbot.waitUntil(lambda: len(window.entries) == 2)
    rerun = window.current()
    assert rerun is not None
    assert rerun.rerun_of == window.entries[1].id
    assert_heard(BIRCH, rerun.text, SENTENCE_WER)
    assert window.difference.text().startswith(f"Re-run of #{rerun.rerun_of}")
    original = window.entries[1]
    window.select_id(original.id)
    window.rerun_model.setCurrentIndex(window.rerun_model.findData("whisper-base"))
    window.rerun_button.click()  # another model: loaded beside the dictation's own
    qtbot.waitUntil(lambda: len(window.entries) == 3, timeout=120_000)
    other = window.current()
    assert other is not None
    assert (other.model, other.rerun_of) == ("whisper-base", original.id)
    assert_heard(BIRCH, other.text, SENTENCE_WER)
    window.select_id(rerun.id)
    window.type_button.click()
    qtbot.waitUntil(lambda: len(voxtray.output.typed) == 2)
    assert voxtray.output.typed[1] == rerun.text
    window.learn_requested.emit(Learn.REPLACEMENT, "birch", "Birch")
    saved = json.loads((Path(voxtray.history.path).parent / "settings.json").read_text())
    assert saved["replacements"].splitlines()[-1] == "birch -> Birch"
    assert voxtray.settings.replacements.splitlines()[-1] == "birch -> Birch"


def test_copy_of_several_keeps_their_spoken_order(window: HistoryWindow) -> None:
    window.choose_row(0)
    window.choose_row(1, add=True)
    window.copy_button.click()
    clipboard = QGuiApplication.clipboard()
    assert clipboard is not None
    assert clipboard.text() == "Send the report to Jon\nThe weather is fine today"
    assert window.status.text() == "Copied 2 dictations"


def test_odd_rows_are_shown_as_damaged_and_the_rest_stays_usable(
    qtbot: Any, history: History, audio: AudioArchive
) -> None:
    good = _add(history, "Send the report to Jon")
    blob = _add(history, "stored as a blob")
    dateless = _add(history, "no date")
    raw = sqlite3.connect(history.path)
    raw.execute("UPDATE utterances SET text = CAST(text AS BLOB) WHERE id = ?", (blob,))
    raw.execute(
        "UPDATE utterances SET created_at = 'soon', audio_s = 'long' WHERE id = ?", (dateless,)
    )
    raw.commit()
    raw.close()
    shown = HistoryWindow(history, audio, (200, 30))
    qtbot.addWidget(shown)
    shown.show()
    assert [entry.id for entry in shown.entries] == [dateless, blob, good]
    rows = [[shown.table.item(r, c).text() for c in range(len(COLUMNS))] for r in range(3)]
    assert rows[0][3] == "unknown time"
    assert rows[0][-1] == "damaged: its time is not a date; its duration is not a number of seconds"
    assert rows[1][-1] == "damaged: text is stored as bytes"
    assert rows[2][-1] == "no"
    assert shown.status.text() == "2 dictations are damaged: shown with what could be read"
    shown.select_id(blob)
    assert shown.text.toPlainText() == "stored as a blob"
    shown.search.setText("report")
    qtbot.waitUntil(lambda: _texts(shown) == ["Send the report to Jon"])


def test_delete_says_how_many_it_deleted(
    qtbot: Any, window: HistoryWindow, history: History, audio: AudioArchive
) -> None:
    window.confirm = lambda _question: True
    window.show_empty.setChecked(True)
    ids = [entry.id for entry in window.entries]
    (audio.folder / f"{ids[0]}.wav").mkdir()  # a folder named like its recording
    for row in range(3):
        window.choose_row(row, add=True)
    window.table.setFocus()
    qtbot.keyClick(window.table, Qt.Key.Key_Delete)
    assert [history.get(entry_id) for entry_id in ids] == [None, None, None]
    assert window.status.text() == "Deleted 3"
    assert (audio.folder / f"{ids[0]}.wav").is_dir()  # not Voxtray's: left alone


def test_delete_counts_what_another_program_deleted_first(
    window: HistoryWindow, history: History
) -> None:
    window.confirm = lambda _question: True
    first, second = (entry.id for entry in window.entries)
    window.choose_row(0)
    window.choose_row(1, add=True)
    with History(history.path) as other:
        other.delete(first)
    window.delete_button.click()
    assert history.get(second) is None
    assert window.status.text() == f"Deleted 1 of 2 (no history entry with id {first})"


def test_export_to_a_fifo_says_why_and_leaves_it(window: HistoryWindow, tmp_path: Path) -> None:
    fifo = tmp_path / "dictations.txt"
    os.mkfifo(fifo)
    window.ask_export = lambda: (fifo, ExportFormat.TXT)
    window.table.clearSelection()
    window.export_button.click()
    assert window.status.text() == f"cannot export to {fifo}: it is a FIFO, not a regular file"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_ten_rerun_presses_load_one_model_at_a_time(qtbot: Any, voxtray: Any) -> None:
    history: History = voxtray.history
    clip = read_wav(CLIP)
    originals = [_add(history, f"clip {n}") for n in range(3)]
    for entry_id in originals:
        voxtray.worker.dictation.audio.store(entry_id, clip)
    voxtray.menu.history_requested.emit()
    qtbot.waitUntil(lambda: voxtray.histories.window is not None)
    window: HistoryWindow = voxtray.histories.window
    window.rerun_model.setCurrentIndex(window.rerun_model.findData("whisper-base"))
    for press in range(10):
        window.select_id(originals[press % 3])
        window.rerun_button.click()
    running = [thread for thread in threading.enumerate() if thread.name == "voxtray-rerun"]
    assert len(running) == 1
    assert window.status.text().startswith("Already re-transcribing #")

    def finished() -> bool:
        idle = not any(t.name == "voxtray-rerun" for t in threading.enumerate())
        return idle and len(history.search(limit=100)) == 6

    qtbot.waitUntil(finished, timeout=240_000)
    reruns = [entry for entry in history.search(limit=100) if entry.rerun_of is not None]
    assert sorted(entry.rerun_of for entry in reruns) == originals  # each once
    for entry in reruns:
        assert entry.model == "whisper-base"
        # At most one word of the eight misheard.
        assert word_errors("the birch canoe slid on the smooth planks", entry.text).rate <= 0.125
