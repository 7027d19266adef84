"""Each dictation's audio beside its history entry, kept within a size and an age limit.

Files are 16 kHz mono 16-bit WAV named after the entry id (``<id>.wav``), readable by the
user only. Pruning removes files past the age limit, then the oldest until the folder
fits the size limit; a limit of 0 keeps nothing.
"""

from __future__ import annotations

import contextlib
import os
import time
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.errors import DiskError, NotFoundError, disk_error
from voxtray.paths import data_home

AUDIO_FOLDER = "history-audio"
_SUFFIX = ".wav"


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
        return self.folder / f"{int(entry_id)}{_SUFFIX}"

    def has(self, entry_id: int) -> bool:
        return self.path(entry_id).is_file()

    def delete(self, entry_id: int) -> bool:
        """Remove the entry's audio; False when none was kept.

        Raises:
            DiskError: The file cannot be removed.
        """
        path = self.path(entry_id)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise disk_error(exc, f"the history audio {path}") from exc
        return True

    def store(self, entry_id: int, samples: NDArray[np.float32]) -> Path | None:
        """Write ``samples`` (16 kHz mono float) for the entry, then prune.

        Returns:
            The file, or None when the limits keep no audio (nothing is written).

        Raises:
            DiskError: The folder or the file cannot be written.
        """
        if not self.limits.keeps_any or samples.size == 0:
            return None
        pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        path = self.path(entry_id)
        partial = path.with_suffix(".part")
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as raw, wave.open(raw, "wb") as out:
                out.setnchannels(1)
                out.setsampwidth(2)
                out.setframerate(SAMPLE_RATE)
                out.writeframes(pcm)
            os.replace(partial, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                partial.unlink()
            raise disk_error(exc, f"the history audio {path}") from exc
        self.prune()
        return path if path.exists() else None

    def load(self, entry_id: int) -> NDArray[np.float32]:
        """The entry's samples as 16 kHz mono float.

        Raises:
            NotFoundError: No audio is kept for the entry.
            DiskError: The file cannot be read.
        """
        path = self.path(entry_id)
        try:
            with wave.open(str(path), "rb") as source:
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

    def prune(self, now: float | None = None) -> list[Path]:
        """Remove what the limits do not keep: too old first, then oldest-first to size.

        Returns:
            The files removed.
        """
        now = time.time() if now is None else now
        files = sorted(self._files(), key=lambda item: item[1])
        budget = self.limits.megabytes * 1024 * 1024
        max_age = self.limits.days * 86400
        total = sum(size for _, _, size in files)
        removed: list[Path] = []
        for path, mtime, size in files:
            if now - mtime <= max_age and total <= budget:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            removed.append(path)
            total -= size
        return removed

    def _files(self) -> list[tuple[Path, float, int]]:
        found = []
        try:
            entries = list(self.folder.iterdir())
        except OSError:
            return []
        for path in entries:
            if path.suffix != _SUFFIX:
                continue
            with contextlib.suppress(OSError):
                info = path.stat()
                found.append((path, info.st_mtime, info.st_size))
        return found
