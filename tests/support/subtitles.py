"""Reading SRT and WebVTT back, and checking a transcript's timeline against the audio."""

from __future__ import annotations

import re

from voxtray.transcripts.formats import (
    Cue,
)


def parse_srt(text: str) -> list[Cue]:
    """A strict SRT reader: numbered blocks from 1, one timing line, text, a blank line."""
    assert text.endswith("\n")
    cues = []
    blocks = text.rstrip("\n").split("\n\n") if text.strip() else []
    for number, block in enumerate(blocks, start=1):
        index, timing, *lines = block.split("\n")
        assert index == str(number), block
        match = re.fullmatch(f"{SRT_TIME} --> {SRT_TIME}", timing)
        assert match, timing
        assert lines, block
        assert all(line.strip() for line in lines), block
        groups = match.groups()
        cues.append(Cue(_seconds(groups[:4]), _seconds(groups[4:]), " ".join(lines)))
    return cues


def parse_vtt(text: str) -> list[Cue]:
    header, _, body = text.partition("\n\n")
    assert header == "WEBVTT"
    cues = []
    for block in body.rstrip("\n").split("\n\n") if body.strip() else []:
        timing, *lines = block.split("\n")
        match = re.fullmatch(f"{VTT_TIME} --> {VTT_TIME}", timing)
        assert match, timing
        assert lines, block
        assert not any("-->" in line or "<" in line for line in lines)
        groups = match.groups()
        joined = " ".join(lines).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        cues.append(Cue(_seconds(groups[:4]), _seconds(groups[4:]), joined))
    return cues


def check_timeline(cues: list[Cue], duration_s: float) -> None:
    last = 0.0
    for cue in cues:
        assert 0.0 <= last <= cue.start_s < cue.end_s <= duration_s, (cue, duration_s)
        last = cue.end_s


SRT_TIME = r"(\d{2}):(\d{2}):(\d{2}),(\d{3})"


VTT_TIME = r"(\d{2}):(\d{2}):(\d{2})\.(\d{3})"


def _seconds(match: tuple[str, ...]) -> float:
    hours, minutes, secs, millis = (int(part) for part in match)
    assert minutes < 60
    assert secs < 60
    return hours * 3600 + minutes * 60 + secs + millis / 1000
