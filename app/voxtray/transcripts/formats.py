"""Transcripts as files: plain text, SRT and WebVTT subtitles, and JSON.

Cues come from the VAD segments (start and end of each stretch of speech). A segment too
long for a readable subtitle is split at word boundaries, its time shared out by the
number of characters in each part.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from voxtray.choices import TranscriptFormat
from voxtray.errors import disk_error

LINE_CHARS = 42  # the usual subtitle line length
CUE_LINES = 2


class TimedText(Protocol):
    @property
    def start_s(self) -> float: ...

    @property
    def end_s(self) -> float: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class Cue:
    start_s: float
    end_s: float
    text: str


def cues_from(
    segments: Iterable[TimedText],
    duration_s: float | None = None,
    max_chars: int = LINE_CHARS * CUE_LINES,
) -> list[Cue]:
    """Subtitle cues in time order: empty segments dropped, overlaps and reversed times
    clamped, nothing past `duration_s` (to the millisecond below), long segments split."""
    limit = math.inf if duration_s is None else math.floor(duration_s * 1000) / 1000
    cues: list[Cue] = []
    last_end = 0.0
    for segment in segments:
        text = " ".join(segment.text.split())
        if not text:
            continue
        start = min(max(float(segment.start_s), last_end, 0.0), limit)
        end = min(max(float(segment.end_s), start), limit)
        parts = _split(text, max_chars)
        cues.extend(_share_time(parts, start, end))
        last_end = end
    return cues


def _split(text: str, max_chars: int) -> list[str]:
    lines = textwrap.wrap(text, max_chars, break_long_words=False, break_on_hyphens=False)
    return lines or [text]


def _share_time(parts: list[str], start: float, end: float) -> list[Cue]:
    total = sum(len(part) for part in parts)
    cues = []
    at = start
    for index, part in enumerate(parts):
        until = end if index == len(parts) - 1 else at + (end - start) * len(part) / total
        cues.append(Cue(round(at, 3), round(until, 3), part))
        at = until
    return cues


def timestamp(seconds: float, separator: str) -> str:
    """HH:MM:SS<separator>mmm, rounded to the millisecond."""
    total_ms = max(round(seconds * 1000), 0)
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def _lines(text: str) -> str:
    return "\n".join(textwrap.wrap(text, LINE_CHARS, break_long_words=False)) or text


def to_txt(cues: list[Cue]) -> str:
    return "".join(f"{cue.text}\n" for cue in cues)


def to_srt(cues: list[Cue]) -> str:
    blocks = [
        f"{index}\n{timestamp(cue.start_s, ',')} --> {timestamp(cue.end_s, ',')}\n"
        f"{_lines(cue.text)}\n"
        for index, cue in enumerate(cues, start=1)
    ]
    return "\n".join(blocks)


def _vtt_escape(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"-->", "--&gt;", text)


def to_vtt(cues: list[Cue]) -> str:
    blocks = [
        f"{timestamp(cue.start_s, '.')} --> {timestamp(cue.end_s, '.')}\n"
        f"{_vtt_escape(_lines(cue.text))}\n"
        for cue in cues
    ]
    return "WEBVTT\n\n" + "\n".join(blocks)


def to_json(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False, indent=2) + "\n"


def render(
    fmt: TranscriptFormat,
    segments: Iterable[TimedText],
    result: dict[str, Any],
    duration_s: float | None = None,
) -> str:
    """The file's text: `result` (the `transcribe --json` object) for JSON, the segments'
    cues (inside `duration_s`) for the others."""
    if fmt == TranscriptFormat.JSON:
        return to_json(result)
    cues = cues_from(segments, duration_s)
    if fmt == TranscriptFormat.SRT:
        return to_srt(cues)
    if fmt == TranscriptFormat.VTT:
        return to_vtt(cues)
    return to_txt(cues)


def output_path(source: Path, out_dir: Path, fmt: TranscriptFormat) -> Path:
    """`out_dir/<input name without its extension>.<format>`."""
    return out_dir / f"{source.stem}.{fmt.value}"


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file, so a reader never sees half of it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                out.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise disk_error(exc, str(path)) from exc
    return path
