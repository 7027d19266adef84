"""The history database's tables, one migration per schema version."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _schema_v1(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE utterances (
            id INTEGER PRIMARY KEY,
            created_at TEXT NOT NULL,
            text TEXT NOT NULL,
            model TEXT NOT NULL,
            engine TEXT NOT NULL,
            provider TEXT NOT NULL,
            audio_s REAL NOT NULL,
            timings_json TEXT NOT NULL,
            delivered INTEGER NOT NULL DEFAULT 0 CHECK (delivered IN (0, 1)),
            delivery_error TEXT
        )
        """
    )


def _schema_v2_partial_delivery(db: sqlite3.Connection) -> None:
    # What reached the target window when typing stopped early, and which window it was.
    db.execute("ALTER TABLE utterances ADD COLUMN delivered_text TEXT")
    db.execute("ALTER TABLE utterances ADD COLUMN delivery_target TEXT")


def _schema_v3_rerun(db: sqlite3.Connection) -> None:
    # The entry whose kept audio was transcribed again to make this one.
    db.execute("ALTER TABLE utterances ADD COLUMN rerun_of INTEGER")


def _schema_v4_recovered(db: sqlite3.Connection) -> None:
    # 1: recognised at start-up from the journal of a dictation that never finished.
    db.execute("ALTER TABLE utterances ADD COLUMN recovered INTEGER NOT NULL DEFAULT 0")


def _schema_v5_verified(db: sqlite3.Connection) -> None:
    # What reading the field back found: verified, unverified, missing; NULL: not checked.
    db.execute("ALTER TABLE utterances ADD COLUMN verified TEXT")


SEARCH_TABLE = "utterances_fts"


def fts5_available(db: sqlite3.Connection) -> bool:
    return any(row[0] == "ENABLE_FTS5" for row in db.execute("PRAGMA compile_options"))


def has_search_index(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (SEARCH_TABLE,))
    return found.fetchone() is not None


def _schema_v6_search(db: sqlite3.Connection) -> None:
    # Full-text search over the text: an external-content FTS5 index kept by triggers.
    # An SQLite built without FTS5 keeps the history as it is; search then scans the text.
    if not fts5_available(db):
        return
    db.execute(
        "CREATE VIRTUAL TABLE utterances_fts USING fts5("
        "text, content='utterances', content_rowid='id', tokenize='unicode61 remove_diacritics 2')"
    )
    db.execute(
        "CREATE TRIGGER utterances_fts_insert AFTER INSERT ON utterances BEGIN "
        "INSERT INTO utterances_fts(rowid, text) VALUES (new.id, new.text); END"
    )
    db.execute(
        "CREATE TRIGGER utterances_fts_delete AFTER DELETE ON utterances BEGIN "
        "INSERT INTO utterances_fts(utterances_fts, rowid, text) "
        "VALUES ('delete', old.id, old.text); END"
    )
    db.execute(
        "CREATE TRIGGER utterances_fts_update AFTER UPDATE OF text ON utterances BEGIN "
        "INSERT INTO utterances_fts(utterances_fts, rowid, text) "
        "VALUES ('delete', old.id, old.text); "
        "INSERT INTO utterances_fts(rowid, text) VALUES (new.id, new.text); END"
    )
    db.execute("INSERT INTO utterances_fts(utterances_fts) VALUES ('rebuild')")


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _schema_v1,
    _schema_v2_partial_delivery,
    _schema_v3_rerun,
    _schema_v4_recovered,
    _schema_v5_verified,
    _schema_v6_search,
)
"""`MIGRATIONS[n]` takes a database from `PRAGMA user_version` n to n + 1; append only."""
