"""Limits on an install: free disk space checked before it starts, and cancellation."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from voxtray.errors import CancelledError
from voxtray.models.catalog import ModelEntry

CancelFn: TypeAlias = Callable[[], bool]
"""Asked between chunks and steps; True stops the install, keeping what was downloaded."""

__all__ = ["CancelFn", "CancelToken", "Stopper", "bytes_needed", "free_bytes", "free_bytes_at"]

SPACE_MARGIN_BYTES = 64 << 20


def free_bytes(path: Path) -> int:
    """Free space for an unprivileged writer on the file system holding `path`."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return shutil.disk_usage(candidate).free
    return shutil.disk_usage(Path.cwd()).free


def bytes_needed(entry: ModelEntry, already_downloaded: int = 0) -> int:
    """A generous estimate of the peak disk use of installing `entry`: what is still to be
    downloaded, plus the installed files, plus a margin."""
    installed = int(entry.size_mb * 1e6)
    download = entry.download_bytes
    if download is None:
        download = installed
    return max(download - already_downloaded, 0) + installed + SPACE_MARGIN_BYTES


def free_bytes_at(path: Path) -> int:
    # Looked up at call time, so a test can replace `free_bytes` on this module.
    return free_bytes(path)


class Stopper:
    """The user's cancel callback, asked between chunks and between install steps."""

    def __init__(self, cancel: CancelFn | None, name: str) -> None:
        self._cancel = cancel
        self._name = name

    def __call__(self) -> bool:
        return self._cancel is not None and self._cancel()

    def check(self) -> None:
        if self():
            raise CancelledError(f"install of {self._name} cancelled")


class CancelToken:
    """A thread-safe cancel flag to pass as `cancel=`: another thread calls `cancel()`."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def __call__(self) -> bool:
        return self._event.is_set()
