"""A history database held by another program."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def database_locked(path: Path) -> Iterator[None]:
    """Another connection holds the SQLite database at `path` exclusively inside the block,
    as another program reading the history would."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with sqlite3.connect(path, timeout=10) as db:
            db.execute("BEGIN EXCLUSIVE")
            locked.set()
            release.wait(30)
            db.rollback()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10), f"could not lock {path}"
        yield
    finally:
        release.set()
        holder.join()
