"""History entries as records (JSON lines, CSV rows) and as exported files."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from enum import StrEnum

from voxtray.history.store import Entry
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
)


def release_to_text_ms(entry: Entry) -> float | None:
    """Milliseconds from the key's release to the text, when the dictation measured it."""
    value = entry.timings.get("release_to_text")
    return round(value, 1) if value is not None else None


def entry_record(entry: Entry) -> dict[str, str | float | int | bool | None]:
    """One entry as plain values, keyed by `FIELDS`."""
    return {
        "id": entry.id,
        "time": entry.created_at.isoformat(timespec="seconds").replace("+00:00", "Z"),
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
