"""The speech clips kept in the repository (tests/data/speech: sources and licences in its
README and manifest) and reading them."""

from __future__ import annotations

import csv
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

REPO = Path(__file__).resolve().parents[2]
SPEECH_DIR = REPO / "tests" / "data" / "speech"
MANIFEST = SPEECH_DIR / "manifest.tsv"
BENCH_CLIPS = ("harvard_sb_example1", "ls_1089-134691-0000", "timit_ldc93s1")
"""Three short clips a benchmark or self-test run takes in seconds."""


@dataclass(frozen=True)
class Clip:
    id: str
    path: Path
    duration_s: float
    reference: str


def clip_path(clip_id: str) -> Path:
    """The WAV file of one clip of the manifest, by its id."""
    return SPEECH_DIR / "wav" / f"{clip_id}.wav"


CLIP = clip_path("harvard_sb_example1")
"""The clip most tests dictate (tests/support/recognition.py's BIRCH is what it says)."""


def manifest_clip(clip_id: str) -> Clip:
    """One clip of the manifest, with its reference transcript, by its id."""
    return next(clip for clip in load_clips() if clip.id == clip_id)


def load_clips() -> list[Clip]:
    """Every clip of the manifest, with its reference transcript."""
    with MANIFEST.open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        Clip(row["id"], SPEECH_DIR / row["wav"], float(row["duration_s"]), row["reference"])
        for row in rows
    ]


def write_wav(path: Path, audio: NDArray[np.float32]) -> None:
    """Float samples in [-1, 1] at 16 kHz to a 16-bit PCM mono WAV file."""
    pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(pcm.tobytes())


def read_wav(path: Path) -> NDArray[np.float32]:
    """16-bit PCM WAV to float32 samples in [-1, 1] (first channel)."""
    with wave.open(str(path)) as stream:
        frames = stream.readframes(stream.getnframes())
        channels = stream.getnchannels()
    samples = np.frombuffer(frames, dtype=np.int16).reshape(-1, channels)[:, 0]
    return (samples.astype(np.float32) / 32768.0).astype(np.float32)
