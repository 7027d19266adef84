"""Makes this folder's clips of spoken commands with espeak-ng.

    python -m tests.data.commands.make_clips                   # the chosen clips, here
    python -m tests.data.commands.make_clips --candidates DIR  # every voice and rate

Run from the repository root with `app/` on PYTHONPATH (the editable install does that).
Each phrase is spoken by espeak-ng (22.05 kHz), resampled to 16 kHz by Voxtray's own
decoder and written as 16-bit mono WAV, with 0.3 s of silence before and 0.5 s after. A
phrase of several sentences is spoken a sentence at a time with 0.8 s between them, as a
speaker pauses before a command, so each sentence is a voice-detection segment of its
own. `--candidates` writes every phrase in every voice and rate of CANDIDATE_VOICES and
CANDIDATE_RATES with a manifest for check_clips.py; CHOSEN lists the ones kept here (the
README says how they were chosen and checked).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tests.support.audio import write_wav
from voxtray.audio.decode import load_audio

HERE = Path(__file__).resolve().parent
RATE = 16000
LEAD_S, GAP_S, TAIL_S = 0.3, 0.8, 0.5


@dataclass(frozen=True)
class Phrase:
    command: str
    sentences: tuple[str, ...]
    kept: str
    effect: str  # tests.support.spoken_commands.Effect
    spoken_alone: int | None = None  # the sentence that is the command, if one is


@dataclass(frozen=True)
class Clip:
    phrase: str
    voice: str
    rate: int  # words a minute
    command_rate: int | None = None  # the command sentence's own rate, if it differs

    @property
    def id(self) -> str:
        slower = f"_{self.command_rate}" if self.command_rate else ""
        return f"{self.phrase}_{self.voice.replace('+', '_')}_{self.rate}{slower}"


PHRASES = {
    "scratch": Phrase(
        "scratch that",
        ("I hate my boss and I want to quit this job today.", "Scratch that.", "I love my job."),
        "I love my job",
        "scratch",
        spoken_alone=1,
    ),
    "scratch_joined": Phrase(
        "scratch that",
        ("I hate my boss and I want to quit this job today. Scratch that. I love my job.",),
        "I love my job",
        "scratch",
    ),
    "enter": Phrase(
        "press enter", ("Send the report.", "Press enter."), "Send the report", "enter", 1
    ),
    "enter_joined": Phrase(
        "press enter", ("Send the report. Press enter.",), "Send the report", "enter"
    ),
    "paragraph": Phrase(
        "new paragraph",
        ("That is all. New paragraph. Next topic.",),
        "That is all Next topic",
        "paragraph",
    ),
    "period": Phrase(
        "period",
        ("The trial period ends next week period.",),
        "The trial period ends next week",
        "stop",
    ),
    "full_stop": Phrase("full stop", ("It works. Full stop.",), "It works", "stop"),
    "noun": Phrase(
        "period",
        ("The Victorian period was long.",),
        "The Victorian period was long",
        "word",
    ),
}

CANDIDATE_VOICES = (
    "en-us",
    "en-us+f3",
    "en-gb",
    "en-gb+f3",
    "en-gb-x-rp",
    "en-gb-scotland",
    "en-gb-x-gbclan",
    "en-gb-x-gbcwmd",
    "en-us-nyc",
    "en-029",
)
CANDIDATE_RATES = (130, 150, 170)

# Each recognised right by every configuration of whisper-tiny.en in the README's table.
# espeak-ng's "Scratch that" at a speaking pace is heard as "Scratch, uh", "Crash mode" or
# "Scratch-mart"; said slower, as a speaker says a command, it is heard.
CHOSEN = (
    Clip("scratch", "en-gb-x-rp", 150, 120),
    Clip("scratch", "en-029", 150, 120),
    Clip("scratch", "en-us-nyc", 150, 110),
    Clip("enter", "en-gb-x-gbclan", 170),
    Clip("enter", "en-gb", 170),
    Clip("enter_joined", "en-gb-x-rp", 130),
    Clip("paragraph", "en-us", 150),
    Clip("paragraph", "en-us+f3", 170),
    Clip("period", "en-gb-x-rp", 150),
    Clip("period", "en-us", 150),
    Clip("full_stop", "en-gb", 170),
    Clip("full_stop", "en-us+f3", 150),
    Clip("noun", "en-us", 150),
    Clip("noun", "en-029", 170),
)


def spoken(voice: str, rate: int, text: str) -> NDArray[np.float32]:
    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder) / "raw.wav"
        command = ["espeak-ng", "-v", voice, "-s", str(rate), "-w", str(raw), text]
        subprocess.run(command, check=True, timeout=60)
        return load_audio(raw)


def silence(seconds: float) -> NDArray[np.float32]:
    return np.zeros(round(seconds * RATE), np.float32)


def clip_audio(clip: Clip) -> NDArray[np.float32]:
    phrase = PHRASES[clip.phrase]
    pieces = [silence(LEAD_S)]
    for index, sentence in enumerate(phrase.sentences):
        if index:
            pieces.append(silence(GAP_S))
        rate = clip.command_rate if index == phrase.spoken_alone else None
        pieces.append(spoken(clip.voice, rate or clip.rate, sentence))
    pieces.append(silence(TAIL_S))
    return np.concatenate(pieces)


def write_clips(folder: Path, clips: list[Clip]) -> None:
    """The clips as WAV files under folder/wav, listed in folder/manifest.tsv."""
    (folder / "wav").mkdir(parents=True, exist_ok=True)
    rows = ["id\twav\tcommand\tvoice\trate\tsaid\tkept\teffect"]
    for clip in clips:
        phrase = PHRASES[clip.phrase]
        wav = Path("wav") / f"{clip.id}.wav"
        write_wav(folder / wav, clip_audio(clip))
        said = " ".join(phrase.sentences)
        fields = (clip.id, str(wav), phrase.command, clip.voice, str(clip.rate), said)
        rows.append("\t".join((*fields, phrase.kept, phrase.effect)))
    (folder / "manifest.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=Path, help="write every candidate clip here")
    args = parser.parse_args(argv)
    if args.candidates is not None:
        every = [Clip(p, v, r) for p in PHRASES for v in CANDIDATE_VOICES for r in CANDIDATE_RATES]
        write_clips(args.candidates, every)
    else:
        write_clips(HERE, list(CHOSEN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
