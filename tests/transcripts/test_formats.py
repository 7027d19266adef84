"""Transcript files: SRT and WebVTT parsed back by a strict reader, timestamps checked, and
real eval clips through the VAD pipeline with every cue inside the clip."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.support.audio import Clip, read_wav
from tests.support.models import ensure_installed
from tests.support.subtitles import check_timeline, parse_srt, parse_vtt
from voxtray.choices import TranscriptFormat
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.pipeline import DictationPipeline, chunked
from voxtray.inference.vad import SileroVad
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.transcripts.formats import (
    LINE_CHARS,
    cues_from,
    output_path,
    render,
    timestamp,
    to_srt,
    to_txt,
    to_vtt,
    write_text_atomic,
)


@dataclass(frozen=True)
class Seg:
    start_s: float
    end_s: float
    text: str


@pytest.mark.parametrize(
    ("seconds", "srt", "vtt"),
    [
        (0.0, "00:00:00,000", "00:00:00.000"),
        (1.5, "00:00:01,500", "00:00:01.500"),
        (59.9996, "00:01:00,000", "00:01:00.000"),
        (3661.2346, "01:01:01,235", "01:01:01.235"),
        (-0.2, "00:00:00,000", "00:00:00.000"),
    ],
)
def test_timestamps(seconds: float, srt: str, vtt: str) -> None:
    assert timestamp(seconds, ",") == srt
    assert timestamp(seconds, ".") == vtt


def test_round_trip_with_awkward_segments() -> None:
    segments = [
        Seg(0.5, 2.0, "  hello   world "),
        Seg(1.8, 3.0, "overlapping start"),  # starts before the last one ended
        Seg(4.0, 4.0, ""),  # nothing said
        Seg(5.0, 4.5, "end before start"),
        Seg(6.0, 7.0, "a <b> & c --> d"),
    ]
    cues = cues_from(segments)
    assert [c.text for c in cues] == [
        "hello world",
        "overlapping start",
        "end before start",
        "a <b> & c --> d",
    ]
    assert cues[1].start_s == 2.0
    assert cues[2].start_s == cues[2].end_s == 5.0
    srt = parse_srt(to_srt(cues))
    vtt = parse_vtt(to_vtt(cues))
    assert [c.text for c in srt] == [c.text for c in cues]
    assert [c.text for c in vtt] == [c.text for c in cues]
    assert [(c.start_s, c.end_s) for c in srt] == [(c.start_s, c.end_s) for c in cues]
    assert to_txt(cues).splitlines() == [c.text for c in cues]


def test_cues_end_inside_the_audio() -> None:
    """The pipeline rounds segment ends to the millisecond, which can land after the end
    of the audio; cues never do."""
    cues = cues_from([Seg(0.0, 1.54, "in 1813."), Seg(1.6, 2.0, "gone")], duration_s=1.539625)
    assert [(c.start_s, c.end_s) for c in cues] == [(0.0, 1.539), (1.539, 1.539)]
    assert timestamp(cues[0].end_s, ",") == "00:00:01,539"


def test_long_segment_is_split_into_readable_cues() -> None:
    words = " ".join(f"word{i}" for i in range(60))  # about 400 characters over 20 s
    cues = cues_from([Seg(10.0, 30.0, words)])
    assert len(cues) > 3
    assert cues[0].start_s == 10.0
    assert cues[-1].end_s == 30.0
    for before, after in itertools.pairwise(cues):
        assert before.end_s == after.start_s
    assert " ".join(c.text for c in cues) == words
    for cue in parse_srt(to_srt(cues)):
        assert cue.end_s > cue.start_s
    for block in to_srt(cues).split("\n\n"):
        lines = block.strip().split("\n")[2:]
        assert len(lines) <= 2
        assert all(len(line) <= LINE_CHARS for line in lines)


def test_empty_transcript_files_are_still_valid() -> None:
    assert parse_srt(render(TranscriptFormat.SRT, [], {}) + "\n") == []
    assert parse_vtt(render(TranscriptFormat.VTT, [], {})) == []
    assert render(TranscriptFormat.TXT, [], {}) == ""


def test_output_path_and_atomic_write(tmp_path: Path) -> None:
    target = output_path(Path("/in/talk.final.wav"), tmp_path / "out", TranscriptFormat.VTT)
    assert target == tmp_path / "out" / "talk.final.vtt"
    write_text_atomic(target, "WEBVTT\n\n")
    assert target.read_text() == "WEBVTT\n\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["talk.final.vtt"]


@pytest.fixture(scope="module")
def pipeline(model_store: ModelStore, tiny_en: InstalledModel) -> DictationPipeline:
    vad = ensure_installed(model_store, "silero-vad-v6").variant_files("fp32")["model"]
    recognizer = create_recognizer(tiny_en, EngineChoice(engine="sherpa", provider="cpu"))
    return DictationPipeline(SileroVad(vad), recognizer)


def test_real_clips_give_cues_inside_the_clip(
    eval_clips: list[Clip], pipeline: DictationPipeline
) -> None:
    longest = max(eval_clips, key=lambda clip: clip.duration_s)
    shortest = min(eval_clips, key=lambda clip: clip.duration_s)
    for clip in (longest, shortest):
        audio = read_wav(clip.path)
        duration = audio.size / 16000
        record = pipeline.transcribe(chunked(np.asarray(audio, np.float32)))
        assert record.segments, clip.id
        result = {"file": str(clip.path), "text": record.text, "segments": []}
        srt = parse_srt(render(TranscriptFormat.SRT, record.segments, result, duration))
        vtt = parse_vtt(render(TranscriptFormat.VTT, record.segments, result, duration))
        check_timeline(srt, duration)
        check_timeline(vtt, duration)
        assert [(c.start_s, c.end_s) for c in srt] == [(c.start_s, c.end_s) for c in vtt]
        assert " ".join(c.text for c in srt) == " ".join(record.text.split())
        assert json.loads(render(TranscriptFormat.JSON, record.segments, result)) == result
