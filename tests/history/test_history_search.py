"""History search (FTS5), corrections and deletion, and the upgrade from schema 5."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from voxtray.errors import NotFoundError
from voxtray.history import schema
from voxtray.history import store as history_module
from voxtray.history.audio import AudioArchive
from voxtray.history.query import match_expression
from voxtray.history.store import History


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    with History(tmp_path / "history.sqlite3") as opened:
        yield opened


def _add(history: History, text: str) -> int:
    return history.add(
        text, model="whisper-tiny.en", engine="ort", provider="cpu", audio_s=1.5, timings={}
    )


def _texts(entries: list[history_module.Entry]) -> list[str]:
    return [entry.text for entry in entries]


def test_search_finds_words_by_prefix_newest_first(history: History) -> None:
    _add(history, "Send the report to Anneliese.")
    _add(history, "The weather is fine.")
    _add(history, "Report ready, thanks Annelise")
    assert _texts(history.search("report")) == [
        "Report ready, thanks Annelise",
        "Send the report to Anneliese.",
    ]
    assert _texts(history.search("rep sen")) == ["Send the report to Anneliese."]
    assert _texts(history.search("nothing")) == []
    assert len(history.search("")) == 3


def test_search_ignores_accents_and_case(history: History) -> None:
    _add(history, "Café Müller opens at nine")
    assert _texts(history.search("cafe MULLER")) == ["Café Müller opens at nine"]


@pytest.mark.parametrize("typed", ['"', "NEAR(a b)", "a OR", "*", "-x", "col:word", "'"])
def test_search_syntax_typed_by_the_user_is_text(history: History, typed: str) -> None:
    _add(history, "a OR b near x col word")
    history.search(typed)  # never an FTS5 syntax error


def test_match_expression_quotes_every_word() -> None:
    assert match_expression("  ") is None
    assert match_expression('say "hi" now') == '"say"* "hi"* "now"*'


def test_empty_entries_hidden_unless_asked(history: History) -> None:
    _add(history, "")
    _add(history, "   ")
    _add(history, "words")
    assert _texts(history.search()) == ["words"]
    assert len(history.search(include_empty=True)) == 3


def test_limit_and_offset_page_newest_first(history: History) -> None:
    for n in range(25):
        _add(history, f"entry number {n}")
    first = history.search("entry", limit=10)
    second = history.search("entry", limit=10, offset=10)
    assert _texts(first)[0] == "entry number 24"
    assert _texts(second)[0] == "entry number 14"
    assert history.search(limit=0) == []


def test_update_text_is_searchable_and_old_text_is_not(history: History) -> None:
    entry_id = _add(history, "meet with jon")
    history.update_text(entry_id, "meet with Jean")
    assert _texts(history.search("jean")) == ["meet with Jean"]
    assert history.search("jon") == []
    with pytest.raises(NotFoundError):
        history.update_text(9999, "x")


def test_delete_removes_entry_index_and_audio(history: History, tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio")
    entry_id = _add(history, "delete me please")
    kept = _add(history, "keep me")
    archive.store(entry_id, np.zeros(1600, dtype=np.float32))
    assert archive.has(entry_id)
    history.delete(entry_id)
    assert archive.delete(entry_id)
    assert not archive.has(entry_id)
    assert not archive.delete(entry_id)
    assert history.get(entry_id) is None
    assert history.search("delete") == []
    assert [e.id for e in history.search()] == [kept]
    with pytest.raises(NotFoundError):
        history.delete(entry_id)


def test_schema_5_database_gains_a_filled_index(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    raw = sqlite3.connect(path)
    for migration in history_module.MIGRATIONS[:5]:
        migration(raw)
    for n, text in enumerate(["first dictation", "second dictation", ""]):
        raw.execute(
            "INSERT INTO utterances (created_at, text, model, engine, provider, audio_s, "
            "timings_json, delivered) VALUES (?, ?, 'm', 'ort', 'cpu', 1.0, '{}', 1)",
            (f"2026-01-0{n + 1}T00:00:00Z", text),
        )
    raw.execute("PRAGMA user_version = 5")
    raw.commit()
    raw.close()
    with History(path) as upgraded:
        assert _texts(upgraded.search("dictation")) == ["second dictation", "first dictation"]
        assert _texts(upgraded.search("sec")) == ["second dictation"]
        new_id = _add(upgraded, "third dictation")
        assert upgraded.search("third")[0].id == new_id
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone() == (history_module.SCHEMA_VERSION,)


def test_without_fts5_the_history_opens_and_search_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema, "fts5_available", lambda _db: False)
    with History(tmp_path / "plain.sqlite3") as plain:
        _add(plain, "Send the report to Anneliese.")
        _add(plain, "100% sure_thing")
        raw = sqlite3.connect(plain.path)
        assert not schema.has_search_index(raw)
        raw.close()
        assert _texts(plain.search("REPO anneli")) == ["Send the report to Anneliese."]
        assert _texts(plain.search("%")) == _texts(plain.search(""))
        assert _texts(plain.search("sure")) == ["100% sure_thing"]
