"""History entries as records (JSON lines, CSV rows) and as exported files, written only
where a file belongs."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from voxtray.errors import BadInputError, disk_error
from voxtray.fileio import atomic_write
from voxtray.history.rows import Entry
from voxtray.transcripts.formats import Cue, to_srt, to_txt


class ExportFormat(StrEnum):
    TXT = "txt"
    CSV = "csv"
    JSON = "json"
    SRT = "srt"


FIELDS = (
    "id",
    "time",
    "text",
    "target",
    "duration_s",
    "model",
    "engine",
    "provider",
    "release_to_text_ms",
    "delivered",
    "verified",
    "rerun_of",
    "damaged",
)
# A new export file is as private as the history it comes from.
_NEW_FILE_MODE = 0o600


def release_to_text_ms(entry: Entry) -> float | None:
    """Milliseconds from the key's release to the text, when the dictation measured it."""
    value = entry.timings.get("release_to_text")
    return round(value, 1) if value is not None else None


def entry_record(entry: Entry) -> dict[str, str | float | int | bool | None]:
    """One entry as plain values, keyed by `FIELDS`."""
    return {
        "id": entry.id,
        "time": (
            entry.created_at.isoformat(timespec="seconds").replace("+00:00", "Z")
            if entry.created_at is not None
            else None
        ),
        "text": entry.text,
        "target": entry.delivery_target,
        "duration_s": round(entry.audio_s, 3),
        "model": entry.model,
        "engine": entry.engine,
        "provider": entry.provider,
        "release_to_text_ms": release_to_text_ms(entry),
        "delivered": entry.delivered,
        "verified": entry.verified,
        "rerun_of": entry.rerun_of,
        "damaged": entry.damage,
    }


def export(entries: Sequence[Entry], fmt: ExportFormat) -> str:
    """The entries, oldest first, as a file of `fmt`. SRT lays them end to end, each as
    long as its recording."""
    ordered = sorted(entries, key=lambda entry: entry.id)
    if fmt is ExportFormat.JSON:
        return json.dumps([entry_record(e) for e in ordered], ensure_ascii=False, indent=2) + "\n"
    if fmt is ExportFormat.CSV:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        for entry in ordered:
            writer.writerow(entry_record(entry))
        return out.getvalue()
    cues: list[Cue] = []
    start = 0.0
    for entry in ordered:
        text = " ".join(entry.text.split())
        if text:
            cues.append(Cue(start, start + max(entry.audio_s, 0.001), text))
        start += max(entry.audio_s, 0.001)
    return to_srt(cues) if fmt is ExportFormat.SRT else to_txt(cues)


def write_export(path: Path, text: str) -> Path:
    """Write an export to `path`: a new file, or in place of a regular file (through a
    link, of the file it leads to, the link kept). The text goes to a temporary file
    beside it, is synced, then renamed over it, so a failed write leaves the old file.

    Returns:
        The file written.

    Raises:
        BadInputError: `path` is not a regular file (a device such as /dev/full, a FIFO,
            a folder) or is a link to none.
        DiskError: the write failed; the message says why (full disk, no permission).
    """
    target, mode = _export_target(path)
    try:
        atomic_write(target, text.encode("utf-8"), mode)
    except OSError as exc:
        raise disk_error(exc, str(path)) from exc
    return target


def _export_target(path: Path) -> tuple[Path, int]:
    """Where to write `path`'s export, with the permission bits to give it."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path, _NEW_FILE_MODE
    except OSError as exc:
        raise disk_error(exc, str(path)) from exc
    target = path
    if stat.S_ISLNK(info.st_mode):
        try:
            target = path.resolve(strict=True)
            info = os.stat(target)
        except (OSError, RuntimeError):
            raise BadInputError(f"cannot export to {path}: it is a link to nothing") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInputError(
            f"cannot export to {path}: it is {_kind(info.st_mode)}, not a regular file"
        )
    return target, stat.S_IMODE(info.st_mode)


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "something else")
