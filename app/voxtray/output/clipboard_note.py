"""A note of the user's clipboard while a paste borrows it, for when Voxtray dies mid-paste.

Before the clipboard is replaced by dictated text, its saved content goes to a small file
(mode 0600, written whole and renamed into place) with a digest of the dictated text and,
once started, the process serving that text. The paste deletes the note when it has put the
content back. A note found later means the paste never finished: if the clipboard still
holds the dictated text, the saved content is put back and the serving process ended.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from voxtray.desktop.session import DesktopSession
from voxtray.output import selection
from voxtray.output.tools import DeliveryError, kill_group
from voxtray.paths import data_home

log = logging.getLogger(__name__)

JOURNAL_FILE = "clipboard-journal.json"
_HELPERS = (b"xclip", b"wl-copy")


def journal_path() -> Path:
    """Where the note lives: in the data folder."""
    return data_home() / JOURNAL_FILE


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Note:
    """One unfinished paste."""

    display: str
    saved: selection.Saved | None
    text_sha256: str
    writer_pid: int
    helper_pid: int = 0

    def to_json(self) -> str:
        saved = self.saved
        return json.dumps(
            {
                "display": self.display,
                "target": saved.target if saved else None,
                "data": base64.b64encode(saved.data).decode("ascii") if saved else None,
                "text_sha256": self.text_sha256,
                "writer_pid": self.writer_pid,
                "helper_pid": self.helper_pid,
            }
        )

    @classmethod
    def from_json(cls, raw: str) -> Note:
        """Raises ValueError, KeyError or TypeError for a damaged note."""
        fields = json.loads(raw)
        target, data = fields["target"], fields["data"]
        saved = None if target is None else selection.Saved(str(target), base64.b64decode(data))
        return cls(
            display=str(fields["display"]),
            saved=saved,
            text_sha256=str(fields["text_sha256"]),
            writer_pid=int(fields["writer_pid"]),
            helper_pid=int(fields.get("helper_pid") or 0),
        )


def display_of(session: DesktopSession) -> str:
    return session.wayland_display if session.wayland else session.x11_display


def write(path: Path, session: DesktopSession, saved: selection.Saved | None, text: str) -> Note:
    """Note the saved clipboard before the paste replaces it."""
    note = Note(display_of(session), saved, _digest(text), os.getpid())
    _store(path, note)
    return note


def add_helper(path: Path, note: Note, pid: int) -> Note:
    """Add the process that serves the dictated text, to end it after a crash."""
    updated = Note(note.display, note.saved, note.text_sha256, note.writer_pid, pid)
    _store(path, updated)
    return updated


def _store(path: Path, note: Note) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(note.to_json())
        os.replace(partial, path)
    except OSError as exc:
        # The paste goes on without the note: it only matters if Voxtray dies meanwhile.
        log.warning("cannot write the clipboard journal %s: %s", path, exc)


def clear(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def read(path: Path) -> Note | None:
    """The note, None without one; a damaged note is deleted."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read the clipboard journal %s: %s", path, exc)
        return None
    try:
        return Note.from_json(raw)
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("clipboard journal %s is damaged (%s); deleted", path, exc)
        clear(path)
        return None


def recover(path: Path, clipboard: selection.Clipboard) -> bool:
    """Put back the clipboard a dead paste borrowed; True if it was put back.

    A note written by this process belongs to a paste still running and is left alone,
    as is one from another display. Never raises for a clipboard that cannot be read.
    """
    note = read(path)
    if note is None or note.writer_pid == os.getpid():
        return False
    if note.display != display_of(clipboard.session):
        return False
    restored = False
    try:
        current = clipboard.text()
        if current is not None and _digest(current) == note.text_sha256:
            clipboard.restore(note.saved)
            restored = True
    except DeliveryError as exc:
        log.warning("cannot put back the clipboard from %s: %s", path, exc)
        return False
    _end_helper(note.helper_pid)
    clear(path)
    return restored


def _end_helper(pid: int) -> None:
    """End the process that served the dictated text, if it is still that process."""
    if pid <= 0:
        return
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    program = Path(command.split(b"\0", 1)[0].decode("utf-8", "replace")).name.encode()
    with contextlib.suppress(OSError):
        if program in _HELPERS and os.getpgid(pid) == pid:
            kill_group(pid, signal.SIGTERM)
