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
from voxtray.history.store import History
from voxtray.history.words import match_expression


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


def _old_history(path: Path, version: int, texts: list[str]) -> sqlite3.Connection:
    """A history of schema `version` holding `texts`, as that Voxtray wrote it; the
    connection, still open, for the caller to change more and close."""
    raw = sqlite3.connect(path)
    for migration in schema.MIGRATIONS[:version]:
        migration(raw)
    for n, text in enumerate(texts):
        raw.execute(
            "INSERT INTO utterances (created_at, text, model, engine, provider, audio_s, "
            "timings_json, delivered) VALUES (?, ?, 'm', 'ort', 'cpu', 1.0, '{}', 1)",
            (f"2026-01-0{n + 1}T00:00:00Z", text),
        )
    raw.execute(f"PRAGMA user_version = {version}")
    raw.commit()
    return raw


def test_schema_5_database_gains_a_filled_index(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    _old_history(path, 5, ["first dictation", "second dictation", ""]).close()
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


# --- Chinese, Japanese, Korean and full-width text ------------------------------------

CJK = [
    "我喜欢语音识别技术",
    "日本語の音声認識です",
    "음성인식을 합니다",
    "ＡＢＣ会議のメモ、３時から",
    "语言和音乐",
]


@pytest.mark.parametrize(
    ("typed", "found"),
    [
        ("语音", ["我喜欢语音识别技术"]),
        ("识别技术", ["我喜欢语音识别技术"]),
        ("喜欢 技术", ["我喜欢语音识别技术"]),
        ("音声", ["日本語の音声認識です"]),
        ("인식", ["음성인식을 합니다"]),
        ("abc", ["ＡＢＣ会議のメモ、３時から"]),
        ("ＡＢＣ", ["ＡＢＣ会議のメモ、３時から"]),
        ("3時", ["ＡＢＣ会議のメモ、３時から"]),
        ("会議", ["ＡＢＣ会議のメモ、３時から"]),
        ("音乐", ["语言和音乐"]),
        ("语乐", []),  # both characters are there, not side by side
    ],
)
def test_words_inside_cjk_and_full_width_text_are_found(
    tmp_path: Path, typed: str, found: list[str]
) -> None:
    with History(tmp_path / "history.sqlite3") as history:
        for text in CJK:
            _add(history, text)
        assert _texts(history.search(typed)) == found
    with History(tmp_path / "history.sqlite3", read_only=True) as reader:
        assert _texts(reader.search(typed)) == found


def test_a_schema_6_history_moves_to_the_new_index_keeping_everything(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    _old_history(path, 6, ["我喜欢语音识别技术", "Send the report", "ＡＢＣ会議"]).close()
    with History(path) as upgraded:
        assert upgraded.warnings == []
        assert upgraded.count() == 3
        assert _texts(upgraded.search("语音")) == ["我喜欢语音识别技术"]
        assert _texts(upgraded.search("abc")) == ["ＡＢＣ会議"]
        assert _texts(upgraded.search("repo")) == ["Send the report"]
        [report] = upgraded.search("repo")
        upgraded.update_text(report.id, "Send the 报告")
        assert _texts(upgraded.search("报告")) == ["Send the 报告"]
        assert upgraded.search("report") == []
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone() == (history_module.SCHEMA_VERSION,)
        tables = {row[0] for row in check.execute("SELECT name FROM sqlite_master")}
    assert "utterances_fts" not in tables


# --- searching without the word index ---------------------------------------------------

LONG_TEXT = " ".join(f"word{n}" for n in range(1500))


def test_a_schema_6_history_whose_index_is_gone_searches_any_query(tmp_path: Path) -> None:
    """The FTS table dropped by hand: every search once scanned with one LIKE per word,
    and 1,500 words ended in "Expression tree is too large"."""
    path = tmp_path / "old.sqlite3"
    raw = _old_history(path, 6, [LONG_TEXT])
    raw.execute("DROP TABLE utterances_fts")
    raw.commit()
    raw.close()
    with History(path) as history:
        assert _texts(history.search(LONG_TEXT)) == [LONG_TEXT]
        assert history.search(LONG_TEXT + " absent") == []
        _add(history, "a new dictation")  # the old triggers no longer stand in the way
        assert _texts(history.search("new")) == ["a new dictation"]


def test_a_reader_scans_when_another_program_dropped_the_index(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    with History(path) as history:
        _add(history, LONG_TEXT)
        _add(history, "我喜欢语音识别技术")
    with sqlite3.connect(path) as raw:
        raw.execute(f"DROP TABLE {schema.SEARCH_TABLE}")
    query = " ".join([f"word{n}" for n in range(0, 1500, 3)] * 10)  # 5,000 words
    with History(path, read_only=True) as reader:
        assert _texts(reader.search(query)) == [LONG_TEXT]
        assert _texts(reader.search("语音")) == ["我喜欢语音识别技术"]
    with History(path) as history:  # the app rebuilds what is missing
        assert schema.has_search_index(sqlite3.connect(path))
        assert _texts(history.search("语音")) == ["我喜欢语音识别技术"]


def test_without_fts5_any_query_size_is_scanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema, "fts5_available", lambda _db: False)
    with History(tmp_path / "plain.sqlite3") as plain:
        _add(plain, LONG_TEXT)
        assert _texts(plain.search(" ".join([LONG_TEXT] * 3))) == [LONG_TEXT]


def test_rows_another_program_writes_are_found(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    with History(path) as history:
        _add(history, "from Voxtray")
        with sqlite3.connect(path) as other:  # no Voxtray function needed to write
            other.execute(
                "INSERT INTO utterances (created_at, text, model, engine, provider, audio_s, "
                "timings_json) VALUES ('2026-01-01T00:00:00Z', '从别的程序写入的语音', 'm', "
                "'ort', 'cpu', 1.0, '{}')"
            )
            other.execute("UPDATE utterances SET text = 'changed elsewhere' WHERE id = 1")
        locker = sqlite3.connect(path, isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")  # the index cannot catch up: the rows are scanned
        try:
            assert _texts(history.search("语音")) == ["从别的程序写入的语音"]
            assert _texts(history.search("elsewhere")) == ["changed elsewhere"]
            assert history.search("voxtray") == []
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert _texts(history.search("语音")) == ["从别的程序写入的语音"]  # now indexed
        assert history.search("voxtray") == []
