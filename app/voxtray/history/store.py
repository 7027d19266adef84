"""Dictation history: every transcript, saved before it is typed, in one SQLite file.

`History.add()` commits before it returns, so text whose delivery fails is still here.
One connection serves every thread behind a lock (the worker writes, the GUI reads).
A damaged database, or one that is not a Voxtray history, is moved aside and replaced by
an empty one, with a line in `History.warnings` saying where the old file went. The files
are readable by the user only. Every failure is a VoxtrayError: DiskError when a write
cannot be stored (full, read-only, locked by another program), CorruptError otherwise.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

from voxtray.errors import CorruptError, DiskError, NotFoundError, disk_error
from voxtray.history.query import search_sql
from voxtray.history.schema import MIGRATIONS, has_search_index
from voxtray.paths import data_home

HISTORY_FILE = "history.sqlite3"
# SQLite keeps committed transactions in these files next to the database.
_SIDE_FILES = ("-wal", "-shm", "-journal")
# How long a write waits for another program's lock before giving up: the text waits too.
_BUSY_TIMEOUT_S = 2.0

_CORRUPT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
_LOCKED_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_DISK_CODES = frozenset(
    {
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_PERM,
    }
)


SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class Entry:
    """One saved utterance."""

    id: int
    created_at: datetime
    """When it was added, timezone-aware UTC."""
    text: str
    model: str
    engine: str
    provider: str
    audio_s: float
    timings: Mapping[str, float] = field(hash=False)
    """Stage name to seconds, as given to `History.add`."""
    delivered: bool
    delivery_error: str | None
    delivered_text: str | None = None
    """With a partial delivery: the start of `text` that reached `delivery_target`."""
    delivery_target: str | None = None
    """The window the text went to, when known; with a partial delivery the one that got
    `delivered_text`."""
    rerun_of: int | None = None
    """The entry whose kept audio was transcribed again to make this one."""
    recovered: bool = False
    """Recognised at start-up from a dictation that a quit or crash interrupted."""
    verified: str | None = None
    """What reading the field back found (`voxtray.output.verify.Outcome`); None: unchecked."""

    @property
    def partial(self) -> bool:
        """Whether only part of the text reached the window (the rest went elsewhere)."""
        return self.delivered_text is not None


_COLUMNS = (
    "id, created_at, text, model, engine, provider, audio_s, timings_json, delivered, "
    "delivery_error, delivered_text, delivery_target, rerun_of, recovered, verified"
)
_COLUMN_NAMES = frozenset(name.strip() for name in _COLUMNS.split(","))


class History:
    """The history database; safe to share between threads.

    Args:
        path: the database file; by default `history.sqlite3` in the data folder.

    Raises:
        DiskError: if the folder or the database cannot be created or written.
        CorruptError: if a damaged database cannot be replaced.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else data_home() / HISTORY_FILE
        self.warnings: list[str] = []
        """One-line notes the UI should show the user, e.g. that a damaged database was
        set aside; empty when all is well."""
        self._lock = threading.Lock()
        self._closed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise disk_error(exc, f"the history folder {self.path.parent}") from exc
        self._db = self._open_or_recover()
        self._full_text = has_search_index(self._db)

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
    ) -> int:
        """Save an utterance, not yet delivered; it is committed when this returns.

        `recovered` marks text recognised from the journal of an interrupted dictation.

        Returns:
            The new entry's id, for `mark_delivered` or `mark_failed`.

        Raises:
            DiskError: if it cannot be stored (disk full, read-only, locked by another
                program for longer than a couple of seconds); the text is not saved.
        """
        row = (
            _now_iso(),
            text,
            model,
            engine,
            provider,
            float(audio_s),
            _timings_json(timings),
            rerun_of,
            int(recovered),
        )
        sql = (
            "INSERT INTO utterances (created_at, text, model, engine, provider, audio_s, "
            "timings_json, rerun_of, delivered, recovered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?)"
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

    def recent(self, limit: int = 10) -> list[Entry]:
        """Up to `limit` entries, newest first."""
        if limit <= 0:
            return []
        sql = f"SELECT {_COLUMNS} FROM utterances ORDER BY id DESC LIMIT ?"  # noqa: S608
        return [_entry(row) for row in self._read(sql, (limit,))]

    def search(
        self, text: str = "", *, include_empty: bool = False, limit: int = 200, offset: int = 0
    ) -> list[Entry]:
        """Entries whose text holds every word of `text` (each as a word prefix), newest
        first; all entries when `text` is blank. Empty dictations only with `include_empty`."""
        if limit <= 0:
            return []
        sql, params = search_sql(
            _COLUMNS, text, include_empty=include_empty, full_text=self._full_text
        )
        rows = self._read(f"{sql} ORDER BY id DESC LIMIT ? OFFSET ?", (*params, limit, offset))
        return [_entry(row) for row in rows]

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
        sql = f"SELECT {_COLUMNS} FROM utterances WHERE id = ?"  # noqa: S608
        rows = self._read(sql, (entry_id,))
        return _entry(rows[0]) if rows else None

    def count(self) -> int:
        """How many entries there are."""
        return int(self._read("SELECT COUNT(*) FROM utterances", ())[0][0])

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

    def _update(self, entry_id: int, sql: str, params: tuple[Any, ...]) -> None:
        _row_id, changed = self._write(sql, params)
        if changed == 0:
            raise NotFoundError(f"no history entry with id {entry_id}")

    def _write(self, sql: str, params: tuple[Any, ...]) -> tuple[int, int]:
        """Run one statement, committed on return; gives (last row id, rows changed)."""
        with self._lock:
            # Autocommit mode: each statement is its own committed transaction.
            cursor = self._run(sql, params)
            return cursor.lastrowid or 0, cursor.rowcount

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            # Rows are fetched under the lock too: the cursor shares the one connection.
            try:
                return self._run(sql, params).fetchall()
            except sqlite3.Error as exc:
                _translate(exc, self.path)

    def _run(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        if self._closed:
            raise RuntimeError("the history database is closed")
        try:
            return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            _translate(exc, self.path)

    def _open_or_recover(self) -> sqlite3.Connection:
        try:
            return _open(self.path)
        except _Damaged as damaged:
            moved = _move_aside(self.path)
            self.warnings.append(
                f"history database was {damaged.problem}; started a new one and kept the old "
                f"one as {moved}"
            )
        try:
            return _open(self.path)
        except _Damaged as damaged:
            raise CorruptError(f"history database {self.path} is {damaged.problem}") from None


class _Damaged(Exception):
    """The database file cannot be used as is and should be moved aside."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _open(path: Path) -> sqlite3.Connection:
    _make_private(path)
    try:
        db = sqlite3.connect(
            path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        _translate(exc, path)
    try:
        _prepare(db, path)
    except BaseException:
        db.close()
        raise
    return db


def _prepare(db: sqlite3.Connection, path: Path) -> None:
    try:
        _check_integrity(db)
        db.execute("PRAGMA journal_mode = WAL")
        # FULL fsyncs every commit: an entry survives a power cut, not only a crash.
        db.execute("PRAGMA synchronous = FULL")
        _migrate(db)
        _check_schema(db)
    except sqlite3.Error as exc:
        code = exc.sqlite_errorcode & 0xFF
        if code in _CORRUPT_CODES:
            raise _Damaged("damaged") from exc
        if code in _DISK_CODES | _LOCKED_CODES:
            _translate(exc, path)
        # A statement that fails on a readable file: tables of another program or version.
        raise _Damaged(f"not a Voxtray history ({exc})") from exc


def _make_private(path: Path) -> None:
    """Create the database readable by the user only, and close up an older one; SQLite
    gives its -wal and -shm files the database's mode."""
    # Failing here (it exists, a read-only folder) is fine: opening reports what matters.
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    for name in (path.name, *(path.name + suffix for suffix in _SIDE_FILES)):
        with contextlib.suppress(OSError):
            info = os.lstat(path.with_name(name))
            if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
                os.chmod(path.with_name(name), 0o600)


def _check_schema(db: sqlite3.Connection) -> None:
    columns = {row[1] for row in db.execute("PRAGMA table_info(utterances)")}
    missing = ", ".join(sorted(_COLUMN_NAMES - columns))
    if missing:
        raise _Damaged(f"not a Voxtray history (its utterances table lacks {missing})")


def _check_integrity(db: sqlite3.Connection) -> None:
    result = db.execute("PRAGMA quick_check").fetchone()
    if result is None or result[0] != "ok":
        raise _Damaged("damaged")
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise _Damaged(f"from a newer Voxtray (schema {version}, this one reads {SCHEMA_VERSION})")


def _migrate(db: sqlite3.Connection) -> None:
    """Run the migrations this file lacks, each with its version bump in one transaction."""
    while True:
        db.execute("BEGIN IMMEDIATE")
        try:
            # Read again inside the lock: another process may have migrated meanwhile.
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version >= SCHEMA_VERSION:
                db.execute("COMMIT")
                return
            MIGRATIONS[version](db)
            db.execute(f"PRAGMA user_version = {version + 1}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def _move_aside(path: Path) -> Path:
    """Rename the database and its side files to `<name>.corrupt-<timestamp>`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    counter = 1
    while target.exists():
        counter += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{counter}")
    try:
        path.replace(target)
        # A stale -wal next to a fresh database would be replayed into it, so it moves too,
        # keeping the name SQLite looks for beside the moved file.
        for suffix in _SIDE_FILES:
            side = path.with_name(path.name + suffix)
            if side.exists():
                side.replace(target.with_name(target.name + suffix))
    except OSError as exc:
        raise disk_error(exc, f"the history folder {path.parent}") from exc
    return target


def _translate(exc: sqlite3.Error, path: Path) -> NoReturn:
    """Re-raise a SQLite error as the VoxtrayError it amounts to."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in _CORRUPT_CODES:
        raise CorruptError(f"history database {path} is damaged: {exc}") from exc
    if code in _DISK_CODES:
        raise DiskError(f"cannot write the history database {path}: {exc}") from exc
    if code in _LOCKED_CODES:
        raise DiskError(
            f"cannot write the history database {path}: another program has kept it locked "
            f"for over {_BUSY_TIMEOUT_S:g} s"
        ) from exc
    raise CorruptError(f"history database {path} cannot be used: {exc}") from exc


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _timings_json(timings: Mapping[str, float]) -> str:
    # NaN and infinities are not JSON; null keeps the stage name without breaking readers.
    clean = {str(k): (float(v) if math.isfinite(float(v)) else None) for k, v in timings.items()}
    return json.dumps(clean, allow_nan=False)


def _entry(row: tuple[Any, ...]) -> Entry:
    return Entry(
        id=int(row[0]),
        created_at=datetime.fromisoformat(row[1]),
        text=row[2],
        model=row[3],
        engine=row[4],
        provider=row[5],
        audio_s=float(row[6]),
        timings=_parse_timings(row[7]),
        delivered=bool(row[8]),
        delivery_error=row[9],
        delivered_text=row[10],
        delivery_target=row[11],
        rerun_of=row[12],
        recovered=bool(row[13]),
        verified=row[14],
    )


def _parse_timings(text: str) -> dict[str, float]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, int | float)}
