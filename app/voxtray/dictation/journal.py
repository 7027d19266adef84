"""The dictation journal: each dictation's audio on disk while it is spoken, so a quit, a
crash or a failed history write loses nothing.

A dictation gets a raw file (16 kHz mono float32, no header) and a small JSON note beside
it, both readable by the user only. Audio is appended as it arrives and synced at most
every `SYNC_EVERY_S`; once the text is in history and delivered the pair is deleted. Pairs
still on disk at the next start are the dictations that never finished: `unfinished()`
lists them for transcription, or hands back the text the note already holds.

Writing is best effort: a full or read-only disk disables the journal for that dictation
and says so once (`Recording.problem`); the dictation itself carries on. Text that neither
the history nor the journal could take by the time the app quits is kept by `keep_text`,
in the journal or, when its disk is full, in a spare folder in the session's runtime
folder (a RAM file system, off the data disk); the next start stores it like the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import stat
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.fileio import atomic_write

JOURNAL_DIR = "journal"
SYNC_EVERY_S = 0.5
_AUDIO = ".f32"
_NOTE = ".json"
_counter = itertools.count(1)


class Recording:
    """One dictation's journal entry; `append` from one thread at a time."""

    def __init__(self, audio_path: Path, note: dict[str, Any]) -> None:
        self.audio_path = audio_path
        self.note_path = audio_path.with_suffix(_NOTE)
        self.note = note
        self.problem: str | None = None
        self._fd: int | None = None
        self._synced = time.monotonic()
        self._dirty = False
        try:
            self._fd = os.open(
                audio_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600
            )
            self._write_note()
        except OSError as exc:
            self._fail(exc)

    def append(self, samples: NDArray[np.float32]) -> None:
        """Add audio; written at once (a killed process keeps it), synced every 0.5 s."""
        if self._fd is None or samples.size == 0:
            return
        try:
            os.write(self._fd, np.ascontiguousarray(samples, dtype="<f4").tobytes())
            self._dirty = True
            if time.monotonic() - self._synced >= SYNC_EVERY_S:
                self.sync()
        except OSError as exc:
            self._fail(exc)

    def sync(self) -> None:
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False
        self._synced = time.monotonic()

    def update(self, **fields: Any) -> None:
        """Record facts about the dictation (its text, history id, delivery) in the note."""
        self.note.update(fields)
        if self.problem is None:
            try:
                self._write_note()
            except OSError as exc:
                self._fail(exc)

    def finish_audio(self) -> None:
        """No more audio: sync and close the file (the entry stays until `discard`)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                if self._dirty:
                    os.fsync(fd)
            os.close(fd)

    def discard(self) -> None:
        """The dictation is stored and delivered: its journal entry goes."""
        self.finish_audio()
        for path in (self.audio_path, self.note_path):
            with contextlib.suppress(OSError):
                path.unlink()

    def _write_note(self) -> None:
        atomic_write(self.note_path, json.dumps(self.note).encode(), 0o600)

    def _fail(self, exc: OSError) -> None:
        self.problem = f"cannot journal the dictation in {self.audio_path.parent}: " + (
            exc.strerror or type(exc).__name__
        )
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


@dataclass
class Unfinished:
    """A dictation that never finished: its audio and what its note says."""

    audio_path: Path
    note: dict[str, Any]

    @property
    def text(self) -> str | None:
        """The text, when it had been recognised before the dictation stopped short."""
        text = self.note.get("text")
        return text if isinstance(text, str) else None

    @property
    def started(self) -> str:
        return str(self.note.get("started", ""))

    def audio(self) -> NDArray[np.float32]:
        data = _read_regular(self.audio_path)
        if data is None:
            return np.zeros(0, dtype=np.float32)
        usable = len(data) - len(data) % 4  # a write cut short by a kill
        return np.frombuffer(data[:usable], dtype="<f4").astype(np.float32)

    def discard(self) -> None:
        for path in (self.audio_path, self.audio_path.with_suffix(_NOTE)):
            with contextlib.suppress(OSError):
                path.unlink()


def spare_folder(data_folder: Path) -> Path | None:
    """Where text goes when the data disk is full: a folder per data folder under
    `$XDG_RUNTIME_DIR/voxtray`; None outside a desktop session."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime:
        return None
    digest = hashlib.sha256(str(data_folder.resolve()).encode()).hexdigest()[:12]
    return Path(runtime) / "voxtray" / f"unsaved-{digest}"


class Journal:
    """The journal folder (`<data folder>/journal`, 0700), and its spare folder."""

    def __init__(self, folder: Path, spare: Path | None = None) -> None:
        self.folder = folder
        self.spare = spare

    def begin(self, **note: Any) -> Recording:
        """A new entry for a dictation starting now."""
        with contextlib.suppress(OSError):  # Recording reports it
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return Recording(self.folder / _new_name(_AUDIO), {"started": now_stamp(), **note})

    def keep_text(self, note: dict[str, Any]) -> Path | None:
        """Keep a finished dictation's note (its `text` and facts) without audio: in the
        journal, else in the spare folder. Returns where, or None when neither took it."""
        name = _new_name(_NOTE)
        for folder in (self.folder, self.spare):
            if folder is None:
                continue
            try:
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                if folder.is_symlink() or folder.stat().st_uid != os.getuid():
                    continue  # not ours to write into
                atomic_write(folder / name, json.dumps(note).encode(), 0o600)
            except OSError:
                continue
            return folder / name
        return None

    def unfinished(self) -> list[Unfinished]:
        """Entries left by dictations that did not finish, oldest first."""
        found = []
        for folder in (self.folder, self.spare):
            if folder is not None and folder.is_dir():
                found.extend(_entries(folder))
        return sorted(found, key=lambda entry: entry.audio_path.name)


def _new_name(suffix: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{stamp}-{os.getpid()}-{next(_counter)}{suffix}"


def _entries(folder: Path) -> list[Unfinished]:
    found = [
        Unfinished(audio, _read_note(audio.with_suffix(_NOTE)))
        for audio in folder.glob(f"*{_AUDIO}")
    ]
    for path in folder.glob(f"*{_NOTE}"):
        if path.with_suffix(_AUDIO).exists():
            continue
        note = _read_note(path)
        if isinstance(note.get("text"), str):  # kept by keep_text
            found.append(Unfinished(path.with_suffix(_AUDIO), note))
        else:  # the note of a lost audio file
            with contextlib.suppress(OSError):
                path.unlink()
    return found


def now_stamp() -> str:
    """The time now as notes record it (`started`)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _read_note(path: Path) -> dict[str, Any]:
    data = _read_regular(path)
    try:
        note = json.loads(data.decode("utf-8")) if data is not None else {}
    except ValueError:  # UnicodeDecodeError is one
        return {}
    return note if isinstance(note, dict) else {}


def _read_regular(path: Path) -> bytes | None:
    """The bytes of `path` if it is a regular file; a FIFO or device put in the journal
    folder would block a plain read (and the app's start-up) for good."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as stream:
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return None
            return stream.read()
        except OSError:
            return None
