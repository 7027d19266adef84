"""The history database's tables, one migration per schema version, and the upkeep of
its search index."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from voxtray.history.rows import COLUMNS, decode_text
from voxtray.history.words import index_words


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


def _schema_v8_cleanup(db: sqlite3.Connection) -> None:
    # AI clean-up: the recognised text when clean-up ran (`text` is what was delivered), the
    # model's answer (taken, refused or late) and the outcome, "reason: detail"; the mode
    # the window chose.
    # A column already there (a file taken back to an older version by hand) is kept.
    present = {row[1] for row in db.execute("PRAGMA table_info(utterances)")}
    for column in ("raw_text", "cleaned_text", "cleanup", "mode"):
        if column not in present:
            db.execute(f"ALTER TABLE utterances ADD COLUMN {column} TEXT")


def fts5_available(db: sqlite3.Connection) -> bool:
    return any(row[0] == "ENABLE_FTS5" for row in db.execute("PRAGMA compile_options"))


def _exists(db: sqlite3.Connection, name: str) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,))
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


SEARCH_TABLE = "search_words"
"""FTS5 over each entry's `index_words`, rowid = entry id."""
PENDING_TABLE = "search_pending"
"""Ids of entries added, changed or deleted since `index_pending` last ran."""
_PENDING_TRIGGERS = (
    ("search_pending_insert", "INSERT", "new"),
    ("search_pending_update", "UPDATE OF text", "new"),
    ("search_pending_delete", "DELETE", "old"),
)


def has_search_index(db: sqlite3.Connection) -> bool:
    """Whether searches can use the word index (else they scan the text)."""
    return _exists(db, PENDING_TABLE) and _exists(db, SEARCH_TABLE) and fts5_available(db)


def ensure_search_index(db: sqlite3.Connection) -> None:
    """Create what the search index lacks (a hand edit or another program may have
    dropped part of it); when anything was missing, every entry is indexed again.

    The triggers are plain SQL, so a program other than Voxtray that writes the history
    keeps the index honest too: it notes the rows, Voxtray indexes them.
    """
    missing = not _exists(db, PENDING_TABLE)
    db.execute(f"CREATE TABLE IF NOT EXISTS {PENDING_TABLE} (id INTEGER PRIMARY KEY)")
    for name, event, row in _PENDING_TRIGGERS:
        if not _exists(db, name):
            missing = True
            note = f"INSERT OR IGNORE INTO {PENDING_TABLE} (id) VALUES ({row}.id)"  # noqa: S608
            db.execute(f"CREATE TRIGGER {name} AFTER {event} ON utterances BEGIN {note}; END")
    if fts5_available(db) and not _exists(db, SEARCH_TABLE):
        missing = True
        db.execute(
            f"CREATE VIRTUAL TABLE {SEARCH_TABLE} USING fts5("
            "words, tokenize='unicode61 remove_diacritics 2')"
        )
    if missing:
        db.execute(f"INSERT OR IGNORE INTO {PENDING_TABLE} (id) SELECT id FROM utterances")  # noqa: S608


def has_pending(db: sqlite3.Connection) -> bool:
    """Whether entries changed since `index_pending` last ran."""
    return db.execute(f"SELECT 1 FROM {PENDING_TABLE} LIMIT 1").fetchone() is not None  # noqa: S608


def index_pending(db: sqlite3.Connection) -> None:
    """Index the entries noted in `PENDING_TABLE`, in one transaction; nothing to write
    (no transaction) when none is noted."""
    if not has_pending(db):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        noted = db.execute(
            f"SELECT p.id, u.text FROM {PENDING_TABLE} AS p "  # noqa: S608
            "LEFT JOIN utterances AS u ON u.id = p.id"
        ).fetchall()
        for entry_id, text in noted:
            db.execute(f"DELETE FROM {SEARCH_TABLE} WHERE rowid = ?", (entry_id,))  # noqa: S608
            if text is not None:
                words = index_words(decode_text(text) if isinstance(text, bytes) else str(text))
                db.execute(
                    f"INSERT INTO {SEARCH_TABLE} (rowid, words) VALUES (?, ?)",  # noqa: S608
                    (entry_id, words),
                )
        db.execute(f"DELETE FROM {PENDING_TABLE}")  # noqa: S608
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


# Schema 1's columns: the first ten of those an entry is read from.
_FIRST_COLUMNS = frozenset(COLUMNS[:10])
# The columns each later version added, oldest first.
_ADDED_COLUMNS = (
    (2, frozenset({"delivered_text", "delivery_target"})),
    (3, frozenset({"rerun_of"})),
    (4, frozenset({"recovered"})),
    (5, frozenset({"verified"})),
)


_CLEANUP_COLUMNS = frozenset({"raw_text", "cleaned_text", "cleanup", "mode"})


def version_of_tables(db: sqlite3.Connection) -> int:
    """The schema version a database's tables amount to, for a file that lost its
    `user_version` (a history saved with `sqlite3 .dump` and restored); 0 when it holds
    no Voxtray history."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(utterances)")}
    if not columns >= _FIRST_COLUMNS:
        return 0
    version = 1
    for added_in, added in _ADDED_COLUMNS:
        if not columns >= added:
            return version
        version = added_in
    if _exists(db, PENDING_TABLE):
        return 8 if columns >= _CLEANUP_COLUMNS else 7
    return 6 if _exists(db, "utterances_fts") or not fts5_available(db) else 5


def _schema_v7_search_words(db: sqlite3.Connection) -> None:
    # Schema 6 indexed the raw text with triggers: "语音" inside a run of Chinese and
    # full-width letters were not found. The new index holds `index_words`, which SQL
    # alone cannot compute, so triggers note changed rows and Voxtray indexes them.
    for trigger in ("utterances_fts_insert", "utterances_fts_delete", "utterances_fts_update"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    if fts5_available(db):  # dropping an FTS5 table needs the module
        db.execute("DROP TABLE IF EXISTS utterances_fts")
    ensure_search_index(db)


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _schema_v1,
    _schema_v2_partial_delivery,
    _schema_v3_rerun,
    _schema_v4_recovered,
    _schema_v5_verified,
    _schema_v6_search,
    _schema_v7_search_words,
    _schema_v8_cleanup,
)
"""`MIGRATIONS[n]` takes a database from `PRAGMA user_version` n to n + 1; append only."""
