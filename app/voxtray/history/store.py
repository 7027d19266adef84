"""Dictation history: every transcript, saved before it is typed, in one SQLite file.

`History.add()` commits before it returns, so text whose delivery fails is still here.
One connection serves every thread behind a lock (the worker writes, the GUI reads).
A damaged database, or one that is not a Voxtray history, is moved aside and replaced by
an empty one, with a line in `History.warnings` saying where the old file went
(`database`). The files are readable by the user only. Every failure is a VoxtrayError:
DiskError when a write cannot be stored (full, read-only, locked by another program),
CorruptError otherwise. A row that cannot be fully read is listed with `Entry.damage`.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from voxtray.errors import NotFoundError
from voxtray.history.database import (
    BUSY_TIMEOUT_S,
    HOLDS_ALL,
    open_read_only,
    open_writable,
    schema_version,
    translate,
)
from voxtray.history.query import search_sql
from voxtray.history.rows import Cleanup as Cleanup
from voxtray.history.rows import Entry as Entry
from voxtray.history.rows import Value, entry_from_row, timings_json
from voxtray.history.schema import has_pending, index_pending
from voxtray.paths import data_home

log = logging.getLogger(__name__)

HISTORY_FILE = "history.sqlite3"
SCHEMA_VERSION = schema_version()
# Parameters of one statement.
Params = tuple[Value, ...]


class History:
    """The history database; safe to share between threads.

    Args:
        path: the database file; by default `history.sqlite3` in the data folder.
        read_only: only read (`voxtray history --json`): nothing is created, migrated or
            moved aside, and another program's write lock does not stop it.

    Raises:
        DiskError: if the folder or the database cannot be created or written (read,
            with `read_only`).
        CorruptError: if a damaged database cannot be replaced (with `read_only`: if it
            is damaged or not a history this Voxtray reads).
        NotFoundError: with `read_only`, if there is no history yet.
    """

    def __init__(self, path: Path | None = None, *, read_only: bool = False) -> None:
        self.path = path if path is not None else data_home() / HISTORY_FILE
        self.read_only = read_only
        self.warnings: list[str] = []
        """One-line notes the UI should show the user, e.g. that a damaged database was
        set aside; empty when all is well."""
        self._lock = threading.Lock()
        self._closed = False
        opened = open_read_only(self.path) if read_only else open_writable(self.path, self.warnings)
        self._db = opened.db
        self._select = opened.select
        self._full_text = opened.full_text

    @property
    def warning(self) -> str | None:
        """The first of `warnings`, or None."""
        return self.warnings[0] if self.warnings else None

    def add(
        self,
        text: str,
        *,
        model: str,
        engine: str,
        provider: str,
        audio_s: float,
        timings: Mapping[str, float],
        rerun_of: int | None = None,
        recovered: bool = False,
        cleanup: Cleanup | None = None,
        mode: str | None = None,
    ) -> int:
        """Save an utterance, not yet delivered; it is committed when this returns.

        `recovered` marks text recognised from the journal of an interrupted dictation;
        `cleanup` what AI clean-up made of it (`text` is then what is delivered); `mode`
        the mode the window chose.

        Returns:
            The new entry's id, for `mark_delivered` or `mark_failed`.

        Raises:
            DiskError: if it cannot be stored (disk full, read-only, locked by another
                program for longer than a couple of seconds); the text is not saved.
        """
        row: Params = (
            _now_iso(),
            text,
            model,
            engine,
            provider,
            float(audio_s),
            timings_json(timings),
            rerun_of,
            int(recovered),
            *(cleanup.row() if cleanup is not None else (None, None, None)),
            mode,
        )
        sql = (
            "INSERT INTO utterances (created_at, text, model, engine, provider, audio_s, "
            "timings_json, rerun_of, delivered, recovered, raw_text, cleaned_text, cleanup, "
            "mode) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)"
        )
        entry_id, _changed = self._write(sql, row)
        return entry_id

    def mark_delivered(self, entry_id: int, target: str | None = None) -> None:
        """Record that the text reached the target window (`target`, as told to the user).

        Raises:
            NotFoundError: if there is no entry with this id.
        """
        sql = (
            "UPDATE utterances SET delivered = 1, delivery_error = NULL, "
            "delivery_target = coalesce(?, delivery_target) WHERE id = ?"
        )
        self._update(entry_id, sql, (target, entry_id))

    def mark_failed(self, entry_id: int, error: str) -> None:
        """Record that delivery failed, and why.

        Raises:
            NotFoundError: if there is no entry with this id.
        """
        sql = "UPDATE utterances SET delivered = 0, delivery_error = ? WHERE id = ?"
        self._update(entry_id, sql, (error, entry_id))

    def mark_partial(self, entry_id: int, delivered_text: str, target: str, reason: str) -> None:
        """Record that typing stopped early: what reached which window, and why.

        The entry stays undelivered (the rest went to the clipboard, or nowhere), with
        ``reason`` as its delivery error.

        Raises:
            NotFoundError: if there is no entry with this id.
        """
        sql = (
            "UPDATE utterances SET delivered = 0, delivery_error = ?, delivered_text = ?, "
            "delivery_target = ? WHERE id = ?"
        )
        self._update(entry_id, sql, (reason, delivered_text, target, entry_id))

    def mark_verified(self, entry_id: int, outcome: str) -> None:
        """Record what reading the field back found after delivery.

        Raises:
            NotFoundError: if there is no entry with this id.
        """
        sql = "UPDATE utterances SET verified = ? WHERE id = ?"
        self._update(entry_id, sql, (outcome, entry_id))

    def mark_cleanup(self, entry_id: int, cleanup: Cleanup) -> None:
        """Record a clean-up answer that came after the text was delivered (kept, not typed).

        Raises:
            NotFoundError: if there is no entry with this id.
        """
        sql = "UPDATE utterances SET raw_text = ?, cleaned_text = ?, cleanup = ? WHERE id = ?"
        self._update(entry_id, sql, (*cleanup.row(), entry_id))

    def recent(self, limit: int = 10) -> list[Entry]:
        """Up to `limit` entries, newest first."""
        if limit <= 0:
            return []
        sql = f"SELECT {self._select} FROM utterances ORDER BY id DESC LIMIT ?"  # noqa: S608
        return [entry_from_row(row) for row in self._read(sql, (limit,))]

    def search(
        self, text: str = "", *, include_empty: bool = False, limit: int = 200, offset: int = 0
    ) -> list[Entry]:
        """Entries whose text holds every word of `text` (each as a word prefix; a run of
        Chinese, Japanese or Korean as a run of characters), newest first; all entries when
        `text` is blank. Empty dictations only with `include_empty`."""
        if limit <= 0:
            return []
        with self._lock:  # an entry added between the two would be missed
            pending = self._catch_up_index()
            sql, params = search_sql(
                self._select,
                text,
                include_empty=include_empty,
                full_text=self._full_text,
                holds_all=HOLDS_ALL,
                pending=pending,
            )
            rows = self._fetch(f"{sql} ORDER BY id DESC LIMIT ? OFFSET ?", (*params, limit, offset))
        return [entry_from_row(row) for row in rows]

    def ids(self) -> set[int]:
        """The ids of every entry."""
        return {
            row[0] for row in self._read("SELECT id FROM utterances", ()) if isinstance(row[0], int)
        }

    def update_text(self, entry_id: int, text: str) -> None:
        """Replace an entry's text (a correction); the search index follows.

        Raises:
            NotFoundError: if there is no entry with this id.
        """
        self._update(entry_id, "UPDATE utterances SET text = ? WHERE id = ?", (text, entry_id))

    def delete(self, entry_id: int) -> None:
        """Remove an entry; its kept audio is `AudioArchive.delete`'s.

        Raises:
            NotFoundError: if there is no entry with this id.
        """
        self._update(entry_id, "DELETE FROM utterances WHERE id = ?", (entry_id,))

    def get(self, entry_id: int) -> Entry | None:
        """The entry with this id, or None."""
        sql = f"SELECT {self._select} FROM utterances WHERE id = ?"  # noqa: S608
        rows = self._read(sql, (entry_id,))
        return entry_from_row(rows[0]) if rows else None

    def count(self) -> int:
        """How many entries there are."""
        counted = self._read("SELECT COUNT(*) FROM utterances", ())[0][0]
        return counted if isinstance(counted, int) else 0

    def close(self) -> None:
        """Close the database; further calls other than `close` raise RuntimeError."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _update(self, entry_id: int, sql: str, params: Params) -> None:
        _row_id, changed = self._write(sql, params)
        if changed == 0:
            raise NotFoundError(f"no history entry with id {entry_id}")

    def _write(self, sql: str, params: Params) -> tuple[int, int]:
        """Run one statement, committed on return; gives (last row id, rows changed)."""
        with self._lock:
            # Autocommit mode: each statement is its own committed transaction.
            cursor = self._run(sql, params)
            return cursor.lastrowid or 0, cursor.rowcount

    def _read(self, sql: str, params: Params) -> list[tuple[Value, ...]]:
        with self._lock:
            return self._fetch(sql, params)

    def _fetch(self, sql: str, params: Params) -> list[tuple[Value, ...]]:
        """Run a query and fetch its rows; under the lock, as the cursor shares the one
        connection."""
        try:
            return self._run(sql, params).fetchall()
        except sqlite3.Error as exc:
            translate(exc, self.path, read_only=self.read_only)

    def _run(self, sql: str, params: Params) -> sqlite3.Cursor:
        if self._closed:
            raise RuntimeError("the history database is closed")
        try:
            return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            translate(exc, self.path, read_only=self.read_only)

    def _catch_up_index(self) -> bool:
        """Index entries changed since the last search; under the lock. Another program's
        lock is not waited for: the search then scans those entries instead. Whether some
        are still to index."""
        if not self._full_text or self._closed or not self._has_pending():
            return False
        if not self.read_only:
            self._db.execute("PRAGMA busy_timeout = 0")
            try:
                index_pending(self._db)
            except sqlite3.Error as exc:
                log.info("search index not brought up to date: %s", exc)
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return self._has_pending()

    def _has_pending(self) -> bool:
        try:
            return has_pending(self._db)
        except sqlite3.Error as exc:
            translate(exc, self.path, read_only=self.read_only)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
