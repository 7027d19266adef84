"""What can stand where Voxtray expects one of its own files: a folder, a FIFO (a plain
read waits for a writer for good) or a link to /dev/zero (a plain read never ends), and
the words Voxtray uses for each."""

from __future__ import annotations

import os
from pathlib import Path

SAID: dict[str, str] = {
    "folder": "a folder, not a regular file",
    "fifo": "a named pipe (FIFO), not a regular file",
    "dev-zero": "a device, not a regular file",
}
"""Each kind, as a one-line warning names it."""


def put_special(kind: str, path: Path) -> None:
    """Make `path` (absent) a `kind` of `SAID`."""
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        raise ValueError(f"no special file {kind!r}")
