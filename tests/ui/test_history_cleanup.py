"""The History window and AI clean-up, offscreen: the outcome beside each text, what
clean-up changed or which answer it refused, typing the text as said, and clean-up run
again against a real chat server on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.support.chat_server import ChatServer, tidy
from voxtray.cleanup import Cleaner, CleanupConfig
from voxtray.history.audio import AudioArchive
from voxtray.history.store import Cleanup, History
from voxtray.ui.history_window import HistoryWindow

pytest.importorskip("pytestqt")

RAW = "um send the budget to ana by friday"
CLEANED = "Send the budget to ana by friday."
REFUSED = "Sure! Here is your cleaned text."


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    with History(tmp_path / "history.sqlite3") as opened:
        yield opened


def _add(history: History, text: str, cleanup: Cleanup | None) -> int:
    return history.add(
        text, model="whisper-tiny.en", engine="ort", provider="cpu", audio_s=2.0,
        timings={"release_to_text": 120.0}, cleanup=cleanup,
    )  # fmt: skip


def _window(
    qtbot: Any, history: History, tmp_path: Path, cleaner: Callable[[], Cleaner | None]
) -> HistoryWindow:
    shown = HistoryWindow(history, AudioArchive(tmp_path / "audio"), (200, 30), cleaner=cleaner)
    qtbot.addWidget(shown)
    shown.show()
    shown.activateWindow()
    qtbot.waitUntil(shown.isActiveWindow)
    return shown


def _cells(window: HistoryWindow, row: int) -> list[str]:
    return [window.table.item(row, column).text() for column in (0, 2)]  # text, clean-up


def test_outcomes_and_differences_are_shown_and_the_raw_text_typed(
    qtbot: Any, history: History, tmp_path: Path
) -> None:
    refused = _add(history, RAW, Cleanup(RAW, REFUSED, "answered: raw text: it answered"))
    cleaned = _add(history, CLEANED, Cleanup(RAW, CLEANED, "accepted: cleaned up in 80 ms"))
    window = _window(qtbot, history, tmp_path, lambda: None)
    assert _cells(window, 0) == [CLEANED, "cleaned up"]
    assert _cells(window, 1) == [RAW, "typed as said (answered)"]

    window.select_id(cleaned)
    assert window.difference.text().startswith("Clean-up changed what you said:")
    assert "<s>um send</s>" in window.difference.text()
    assert window.raw_button.isEnabled()
    typed: list[str] = []
    window.type_again_requested.connect(typed.append)
    qtbot.keyClick(window, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)  # Type r&aw text
    qtbot.waitUntil(lambda: typed == [RAW])

    window.select_id(refused)
    assert window.difference.text().startswith("Clean-up's answer, not typed (it answered):")
    assert not window.raw_button.isEnabled()  # what was typed is the raw text already


def test_clean_up_again_with_clean_up_off_says_where_to_turn_it_on(
    qtbot: Any, history: History, tmp_path: Path
) -> None:
    entry = _add(history, RAW, Cleanup(RAW, None, "late: raw text: no answer within 2000 ms"))
    window = _window(qtbot, history, tmp_path, lambda: None)
    window.select_id(entry)
    window.cleanup_button.click()
    assert window.status.text() == "Clean-up is off: turn it on in Settings, Clean-up"
    got = history.get(entry)
    assert got is not None
    assert got.text == RAW


def test_clean_up_again_against_a_real_server_keeps_the_raw_text(
    qtbot: Any, history: History, tmp_path: Path, chat_server: Callable[..., ChatServer]
) -> None:
    server = chat_server(reply=lambda request: tidy(request.transcript))
    entry = _add(history, RAW, Cleanup(RAW, None, "late: raw text: no answer within 2000 ms"))
    cleaner = Cleaner(CleanupConfig(endpoint=server.url, model="tidy-1"))
    window = _window(qtbot, history, tmp_path, lambda: cleaner)
    window.select_id(entry)
    qtbot.keyClick(window, Qt.Key.Key_U, Qt.KeyboardModifier.AltModifier)  # Clean &up again
    qtbot.waitUntil(lambda: "cleaned up in" in window.status.text(), timeout=10_000)
    requests = [request for request in server.requests if request.method == "POST"]
    assert [request.transcript for request in requests] == [RAW]
    got = history.get(entry)
    assert got is not None
    assert (got.text, got.raw_text, got.cleaned_text) == (tidy(RAW), RAW, tidy(RAW))
    assert got.cleanup is not None
    assert got.cleanup.startswith("accepted: cleaned up in")
    assert _cells(window, 0) == [tidy(RAW), "cleaned up"]
