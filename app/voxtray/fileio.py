"""Crash-safe file writes, and reads that cannot hang or exhaust memory.

`atomic_write` writes a temp file beside the target, syncs it and renames it over the
target. A process killed before the rename leaves its temp file behind; the owner of the
target sweeps such leftovers with `remove_stale_temps`. `read_regular` reads a file Voxtray
keeps (settings, measurements) only when it is a regular file of bounded size: a FIFO put
in its place would block the read for good, a link to /dev/zero would never end.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import stat
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


# Not blocking: a FIFO swapped in after the stat must not hang the open (POSIX only).
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class UnusableFileError(OSError):
    """A path that holds no regular file Voxtray could read, or one over the size limit;
    `strerror` says which in words ("a named pipe (FIFO), not a regular file", "larger
    than 8 MiB")."""


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of `path` when it is a regular file (a link to one is followed) of at
    most `limit` bytes.

    Raises:
        FileNotFoundError: nothing is there.
        UnusableFileError: a FIFO, device, socket or folder, never opened for reading (a
            FIFO would block, a device never end), or a file larger than `limit`.
        OSError: it cannot be opened or read.
    """
    _require_regular(path, os.stat(path))
    descriptor = os.open(path, _READ_FLAGS)
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(descriptor)  # the path may have been swapped since the stat
        _require_regular(path, info)
        if info.st_size > limit:
            raise _too_large(path, limit)
        data = stream.read(limit + 1)
    if len(data) > limit:  # grew while being read
        raise _too_large(path, limit)
    return data


def _require_regular(path: Path, info: os.stat_result) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        kind, code = "a folder", errno.EISDIR
    elif stat.S_ISFIFO(mode):
        kind, code = "a named pipe (FIFO)", errno.EINVAL
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind, code = "a device", errno.EINVAL
    else:
        kind, code = "a socket or other special file", errno.EINVAL
    raise UnusableFileError(code, f"{kind}, not a regular file", str(path))


def _too_large(path: Path, limit: int) -> UnusableFileError:
    return UnusableFileError(errno.EFBIG, f"larger than {_size(limit)}", str(path))


def _size(count: int) -> str:
    return f"{count / 2**20:g} MiB" if count >= 2**20 else f"{count} bytes"


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
