"""Each dictation's audio beside its history entry, kept within a size and an age limit.

Files are 16 kHz mono 16-bit WAV named after the entry id (``<id>.wav``), readable by the
user only, in a folder of Voxtray's own. Every file operation goes through that folder's
descriptor, opened without following a link: a ``history-audio`` that is a link to
another folder is not used. Pruning removes, of the regular ``<id>.wav`` files whose id
the history names, those past the age limit, then the oldest until the folder fits the
size limit; a limit of 0 keeps nothing. Anything else in the folder (a user's recording,
a folder named ``*.wav``, a link) is left alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
import wave
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.errors import DiskError, NotFoundError, disk_error
from voxtray.paths import data_home

AUDIO_FOLDER = "history-audio"
_SUFFIX = ".wav"
_KEPT_NAME = re.compile(r"([1-9][0-9]*)\.wav")


class LinkedFolderError(OSError):
    """The audio folder is a link: Voxtray writes and removes nothing through it."""


@dataclass(frozen=True)
class AudioLimits:
    """How much audio to keep: megabytes in all and days since it was recorded."""

    megabytes: int = 200
    days: int = 30

    @property
    def keeps_any(self) -> bool:
        return self.megabytes > 0 and self.days > 0


class AudioArchive:
    """The folder of kept recordings.

    Args:
        folder: Where the files go; ``history-audio`` in the data folder by default.
        limits: What `prune` keeps.
    """

    def __init__(self, folder: Path | None = None, limits: AudioLimits | None = None) -> None:
        self.folder = folder if folder is not None else data_home() / AUDIO_FOLDER
        self.limits = limits or AudioLimits()

    def path(self, entry_id: int) -> Path:
        return self.folder / _name(entry_id)

    def has(self, entry_id: int) -> bool:
        with contextlib.suppress(OSError), self._opened() as folder:
            return _is_regular(_name(entry_id), folder)
        return False

    def delete(self, entry_id: int) -> bool:
        """Remove the entry's audio; False when none was kept (nothing, or not a regular
        file: that is not Voxtray's and stays).

        Raises:
            DiskError: The file cannot be removed.
        """
        name = _name(entry_id)
        try:
            with self._opened() as folder:
                if not _is_regular(name, folder):
                    return False
                os.unlink(name, dir_fd=folder)
        except (FileNotFoundError, LinkedFolderError):
            return False
        except OSError as exc:
            raise disk_error(exc, f"the history audio {self.path(entry_id)}") from exc
        return True

    def store(self, entry_id: int, samples: NDArray[np.float32]) -> Path | None:
        """Write ``samples`` (16 kHz mono float) for the entry; `prune` is the caller's,
        off the path that types the text.

        Returns:
            The file, or None when the limits keep no audio (nothing is written).

        Raises:
            DiskError: The folder or the file cannot be written, or the folder is a link.
        """
        if not self.limits.keeps_any or samples.size == 0:
            return None
        pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        name, partial = _name(entry_id), f"{int(entry_id)}.part"
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            with self._opened() as folder:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(partial, dir_fd=folder)  # left by a crash; never followed
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(partial, flags, 0o600, dir_fd=folder)
                try:
                    with os.fdopen(fd, "wb") as raw, wave.open(raw, "wb") as out:
                        out.setnchannels(1)
                        out.setsampwidth(2)
                        out.setframerate(SAMPLE_RATE)
                        out.writeframes(pcm)
                    os.replace(partial, name, src_dir_fd=folder, dst_dir_fd=folder)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(partial, dir_fd=folder)
                    raise
        except OSError as exc:
            raise disk_error(exc, f"the history audio {self.path(entry_id)}") from exc
        return self.path(entry_id)

    def load(self, entry_id: int) -> NDArray[np.float32]:
        """The entry's samples as 16 kHz mono float.

        Raises:
            NotFoundError: No audio is kept for the entry.
            DiskError: The file cannot be read.
        """
        path = self.path(entry_id)
        try:
            with self._opened() as folder:
                if not _is_regular(path.name, folder):
                    raise FileNotFoundError(path)
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                fd = os.open(path.name, flags, dir_fd=folder)
            with os.fdopen(fd, "rb") as raw, wave.open(raw, "rb") as source:
                shape = (source.getnchannels(), source.getsampwidth(), source.getframerate())
                pcm = source.readframes(source.getnframes())
        except FileNotFoundError:
            raise NotFoundError(f"no audio is kept for dictation {entry_id}") from None
        except (OSError, wave.Error, EOFError) as exc:
            raise DiskError(f"cannot read {path}: {exc}") from None
        if shape != (1, 2, SAMPLE_RATE):
            raise DiskError(f"{path} is not the 16 kHz mono 16-bit audio Voxtray keeps")
        whole = len(pcm) - len(pcm) % 2  # a file cut inside its last sample
        if whole == 0:
            raise DiskError(f"{path} holds no audio")
        return np.frombuffer(pcm[:whole], dtype="<i2").astype(np.float32) / 32768.0

    def prune(self, named: Container[int], now: float | None = None) -> list[Path]:
        """Remove what the limits do not keep, too old first, then oldest-first to size,
        of the regular ``<id>.wav`` files whose id is in `named` (the history's ids).
        Never raises: what cannot be looked at or removed stays.

        Returns:
            The files removed.
        """
        now = time.time() if now is None else now
        budget = self.limits.megabytes * 1024 * 1024
        max_age = self.limits.days * 86400
        removed: list[Path] = []
        try:
            with self._opened() as folder:
                files = sorted(_kept_files(folder, named), key=lambda item: item[1])
                total = sum(size for _, _, size in files)
                for name, mtime, size in files:
                    if now - mtime <= max_age and total <= budget:
                        break
                    if _unlink(name, folder):
                        removed.append(self.folder / name)
                        total -= size
        except OSError:
            pass  # no folder, or a link: nothing of Voxtray's to remove
        return removed

    @contextlib.contextmanager
    def _opened(self) -> Iterator[int]:
        """The folder's descriptor; OSError (ELOOP, ENOTDIR) when it is a link or a file."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.folder, flags)
        except OSError as exc:
            if os.path.islink(self.folder):
                raise LinkedFolderError(exc.errno, "a link, not a folder of Voxtray's own") from exc
            raise
        try:
            yield fd
        finally:
            os.close(fd)


def _name(entry_id: int) -> str:
    return f"{int(entry_id)}{_SUFFIX}"


def _is_regular(name: str, folder: int) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _unlink(name: str, folder: int) -> bool:
    """Remove a file; False if it would not go (it stays, and counts as kept)."""
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _kept_files(folder: int, named: Container[int]) -> list[tuple[str, float, int]]:
    """(name, mtime, size) of the regular ``<id>.wav`` files with an id in `named`."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            match = _KEPT_NAME.fullmatch(entry.name)
            if match is None or int(match.group(1)) not in named:
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    found.append((entry.name, info.st_mtime, info.st_size))
    return found
