"""Crash-safe file writes: a file holds either its old bytes or the new ones, never half.

`atomic_write` writes a temp file beside the target, syncs it and renames it over the
target. A process killed before the rename leaves its temp file behind; the owner of the
target sweeps such leftovers with `remove_stale_temps`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
import time
from pathlib import Path

_TEMP_SUFFIX = ".tmp"
# A temp file this old cannot belong to a write still in progress: it is what a crash left.
STALE_TEMP_S = 60.0


def _temp_prefix(target: Path) -> str:
    return f".{target.name}-"


def atomic_write(path: Path, data: bytes, mode: int) -> None:
    """Replace `path` with `data`, with permission bits `mode`, atomically.

    The parent folder is created if missing.

    Raises:
        OSError: if the file cannot be written; `path` then still holds its old bytes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(
        prefix=_temp_prefix(path), suffix=_TEMP_SUFFIX, dir=path.parent
    )
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    # Makes the rename itself survive a power cut; Windows cannot open folders, hence best effort.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def remove_stale_temps(path: Path, older_than_s: float = STALE_TEMP_S) -> None:
    """Delete temp files that `atomic_write(path, ...)` calls left when they were killed."""
    now = time.time()
    with contextlib.suppress(OSError):
        for temp in path.parent.glob(glob.escape(_temp_prefix(path)) + "*" + _TEMP_SUFFIX):
            with contextlib.suppress(OSError):
                if now - temp.stat().st_mtime > older_than_s:
                    temp.unlink()
