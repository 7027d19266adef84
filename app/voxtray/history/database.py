"""Opening the history's SQLite file: checked, migrated, its search index kept; damaged or
foreign files moved aside; SQLite's errors as VoxtrayErrors.

A reader (`voxtray history --json`) opens the file read-only: it writes nothing, so no
other program's lock stops it, and it leaves a file it cannot use where it is.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from voxtray.errors import CorruptError, DiskError, NotFoundError, disk_error
from voxtray.history.rows import COLUMNS, decode_text
from voxtray.history.schema import (
    MIGRATIONS,
    ensure_search_index,
    has_search_index,
    index_pending,
    version_of_tables,
)
from voxtray.history.words import holds_all

# SQLite keeps committed transactions in these files next to the database.
SIDE_FILES = ("-wal", "-shm", "-journal")
# How long a statement waits for another program's lock before giving up: the text waits too.
BUSY_TIMEOUT_S = 2.0
HOLDS_ALL = "voxtray_holds_all"
"""The SQL function a search without the word index scans with (`words.holds_all`)."""

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
# Columns a reader of an older schema lacks, read as their default.
_DEFAULTS = {"delivered": "0", "recovered": "0"}


def schema_version() -> int:
    return len(MIGRATIONS)


@dataclass(frozen=True)
class Opened:
    """An open history database and what its tables allow."""

    db: sqlite3.Connection
    select: str
    """The SELECT list giving `rows.COLUMNS`, defaults for columns an old file lacks."""
    full_text: bool
    """Whether searches can use the word index."""


class Damaged(Exception):
    """The database file cannot be used as is and should be moved aside."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def open_writable(path: Path, warnings: list[str]) -> Opened:
    """Open (creating, migrating) the history; a damaged or foreign file is moved aside
    and replaced, with a line in `warnings` saying where it went.

    Raises:
        DiskError: if the folder or the database cannot be created or written.
        CorruptError: if a damaged database cannot be replaced.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise disk_error(exc, f"the history folder {path.parent}") from exc
    try:
        return _open(path, read_only=False)
    except Damaged as damaged:
        moved = _move_aside(path)
        warnings.append(
            f"history database was {damaged.problem}; started a new one and kept the old "
            f"one as {moved}"
        )
    try:
        return _open(path, read_only=False)
    except Damaged as damaged:
        raise CorruptError(f"history database {path} is {damaged.problem}") from None


def open_read_only(path: Path) -> Opened:
    """Open the history to read it, writing nothing.

    Raises:
        NotFoundError: if there is no history file yet.
        CorruptError: if the file is damaged or not a history this Voxtray reads (the
            app sets it aside at its next start).
        DiskError: if it cannot be read (locked by another program, no permission).
    """
    if not path.is_file():
        raise NotFoundError(f"no history database at {path}")
    try:
        return _open(path, read_only=True)
    except Damaged as damaged:
        raise CorruptError(
            f"history database {path} is {damaged.problem}; the app sets it aside at its next start"
        ) from None


def _open(path: Path, *, read_only: bool) -> Opened:
    if not read_only:
        _make_private(path)
    target: str | Path = f"{path.absolute().as_uri()}?mode=ro" if read_only else path
    try:
        db = sqlite3.connect(
            target,
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,
            check_same_thread=False,
            uri=read_only,
        )
    except sqlite3.Error as exc:
        translate(exc, path, read_only=read_only)
    db.text_factory = decode_text  # text that is not UTF-8 must not fail the whole query
    db.create_function(HOLDS_ALL, 2, holds_all, deterministic=True)
    try:
        return _prepare(db, path, read_only=read_only)
    except BaseException:
        db.close()
        raise


def _prepare(db: sqlite3.Connection, path: Path, *, read_only: bool) -> Opened:
    try:
        _check_integrity(db)
        if not read_only:
            db.execute("PRAGMA journal_mode = WAL")
            # FULL fsyncs every commit: an entry survives a power cut, not only a crash.
            db.execute("PRAGMA synchronous = FULL")
            _migrate(db)
            ensure_search_index(db)
            index_pending(db)
        select = _select_list(db, read_only=read_only)
        return Opened(db, select, has_search_index(db))
    except sqlite3.Error as exc:
        code = exc.sqlite_errorcode & 0xFF
        if code in _CORRUPT_CODES:
            raise Damaged("damaged") from exc
        if code in _DISK_CODES | _LOCKED_CODES:
            translate(exc, path, read_only=read_only)
        # A statement that fails on a readable file: tables of another program or version.
        raise Damaged(f"not a Voxtray history ({exc})") from exc


def _make_private(path: Path) -> None:
    """Create the database readable by the user only, and close up an older one; SQLite
    gives its -wal and -shm files the database's mode."""
    # Failing here (it exists, a read-only folder) is fine: opening reports what matters.
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    for name in (path.name, *(path.name + suffix for suffix in SIDE_FILES)):
        with contextlib.suppress(OSError):
            info = os.lstat(path.with_name(name))
            if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
                os.chmod(path.with_name(name), 0o600)


def _select_list(db: sqlite3.Connection, *, read_only: bool) -> str:
    present = {row[1] for row in db.execute("PRAGMA table_info(utterances)")}
    if read_only and db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is None:
        raise NotFoundError("the history database holds nothing yet")
    missing = [name for name in COLUMNS if name not in present]
    if missing and (not read_only or not version_of_tables(db)):
        raise Damaged(f"not a Voxtray history (its utterances table lacks {', '.join(missing)})")
    return ", ".join(
        name if name in present else f"{_DEFAULTS.get(name, 'NULL')} AS {name}" for name in COLUMNS
    )


def _check_integrity(db: sqlite3.Connection) -> None:
    result = db.execute("PRAGMA quick_check").fetchone()
    if result is None or result[0] != "ok":
        raise Damaged("damaged")
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > schema_version():
        raise Damaged(f"from a newer Voxtray (schema {version}, this one reads {schema_version()})")


def _migrate(db: sqlite3.Connection) -> None:
    """Run the migrations this file lacks, each with its version bump in one transaction."""
    while True:
        db.execute("BEGIN IMMEDIATE")
        try:
            # Read again inside the lock: another process may have migrated meanwhile.
            stored = int(db.execute("PRAGMA user_version").fetchone()[0])
            # Tables without a version: a restored `.dump` keeps the tables, not the version.
            version = stored or version_of_tables(db)
            if version >= schema_version():
                if version != stored:
                    db.execute(f"PRAGMA user_version = {version}")
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
        for suffix in SIDE_FILES:
            side = path.with_name(path.name + suffix)
            if side.exists():
                side.replace(target.with_name(target.name + suffix))
    except OSError as exc:
        raise disk_error(exc, f"the history folder {path.parent}") from exc
    return target


def translate(exc: sqlite3.Error, path: Path, *, read_only: bool = False) -> NoReturn:
    """Re-raise a SQLite error as the VoxtrayError it amounts to."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    verb = "read" if read_only else "write"
    if code in _CORRUPT_CODES:
        raise CorruptError(f"history database {path} is damaged: {exc}") from exc
    if code in _DISK_CODES:
        raise DiskError(f"cannot {verb} the history database {path}: {exc}") from exc
    if code in _LOCKED_CODES:
        raise DiskError(
            f"cannot {verb} the history database {path}: another program has kept it locked "
            f"for over {BUSY_TIMEOUT_S:g} s"
        ) from exc
    raise CorruptError(f"history database {path} cannot be used: {exc}") from exc
