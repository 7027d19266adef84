"""Spoken commands in real speech (tests/data/commands): the clips, how one is recognised
the way the app does it, and whether the command acted on what the recogniser wrote.

A clip passes when processing what was heard leaves the clip's kept words (a few may be
misheard), the command's own words are gone (or, where the phrase is an ordinary word,
kept), and its effect is there: Enter pressed, a paragraph break, a full stop, what came
before taken back. tests/data/commands/check_clips.py applies the same test to choose the
clips, so a test that uses them checks exactly what was verified."""

from __future__ import annotations

import csv
import enum
from dataclasses import dataclass
from pathlib import Path

from tests.support.recognition import words
from voxtray.audio.decode import load_audio
from voxtray.inference.pipeline import DictationPipeline, chunked
from voxtray.scoring.wer import word_errors
from voxtray.text.postprocess import TextOptions, process

COMMANDS_DIR = Path(__file__).resolve().parents[1] / "data" / "commands"

KEPT_WER = 1 / 3
"""Of the words a command leaves, one in three may be misheard ("Send the report" as "Send
the reports"); the command's own words are counted apart, so one left over always fails."""


class Effect(enum.StrEnum):
    """What the command does to the text, beyond removing its own words."""

    SCRATCH = "scratch"  # what was said before it is taken back
    ENTER = "enter"  # Enter is pressed after the text
    PARAGRAPH = "paragraph"  # a blank line
    STOP = "stop"  # a full stop
    WORD = "word"  # no command: the phrase is an ordinary word and stays


@dataclass(frozen=True)
class CommandClip:
    id: str
    path: Path
    command: str
    """The spoken form, as the spoken table lists it ("scratch that", "period")."""
    voice: str
    rate: int
    said: str
    kept: str
    """The words processing leaves, without punctuation or line breaks."""
    effect: Effect


def load_command_clips(folder: Path = COMMANDS_DIR) -> list[CommandClip]:
    """The clips listed in the folder's manifest.tsv."""
    with (folder / "manifest.tsv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        CommandClip(
            row["id"],
            folder / row["wav"],
            row["command"],
            row["voice"],
            int(row["rate"]),
            row["said"],
            row["kept"],
            Effect(row["effect"]),
        )
        for row in rows
    ]


def transcribe_clip(pipeline: DictationPipeline, path: Path) -> str:
    """A clip through voice detection and the recogniser, as `voxtray transcribe` does."""
    return pipeline.transcribe(chunked(load_audio(path)), decode_ahead=False).text


def _count(phrase: list[str], found: list[str]) -> int:
    size = len(phrase)
    return sum(found[i : i + size] == phrase for i in range(len(found) - size + 1))


def command_problem(clip: CommandClip, heard: str) -> str | None:
    """Why the command did not act on `heard` as it should, or None if it did."""
    processed = process(heard, TextOptions())
    left, wanted, phrase = words(processed.text), words(clip.kept), words(clip.command)
    problems = []
    if _count(phrase, left) != _count(phrase, wanted):
        problems.append(f"{clip.command!r} left {_count(phrase, left)} times")
    errors = word_errors(clip.kept, processed.text)
    if errors.rate > KEPT_WER:
        problems.append(f"{errors.errors} of {errors.words} kept words wrong")
    if processed.press_enter != (clip.effect is Effect.ENTER):
        problems.append(f"Enter {'pressed' if processed.press_enter else 'not pressed'}")
    if clip.effect is Effect.PARAGRAPH and "\n\n" not in processed.text:
        problems.append("no paragraph break")
    if clip.effect is Effect.STOP and not processed.text.rstrip().endswith("."):
        problems.append("no full stop at the end")
    if not problems:
        return None
    return f"{clip.id}: {'; '.join(problems)} (heard {heard!r} -> {processed.text!r})"
