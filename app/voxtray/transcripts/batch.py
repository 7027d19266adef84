"""Transcribing many files the way people do it: every input checked before any model is
installed or loaded, a bad file reported and the others still done, each result written
as it comes, overall progress and real-time factor on stderr.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.audio.decode import load_audio
from voxtray.choices import TranscriptFormat
from voxtray.errors import ExitCode, NotFoundError, VoxtrayError
from voxtray.paths import printable
from voxtray.transcripts.formats import output_path, render, write_text_atomic

CACHE_BYTES = 256 << 20
"""Decoded audio kept between the check and the transcription (about 70 min at 16 kHz);
files beyond it are decoded a second time."""


class Pipeline(Protocol):
    def transcribe(self, chunks: Any, *, decode_ahead: bool = ...) -> Any: ...


@dataclass
class CheckedInput:
    path: Path
    duration_s: float = 0.0
    audio: NDArray[np.float32] | None = None
    error: VoxtrayError | None = None


@dataclass
class FileOutcome:
    path: Path
    error: VoxtrayError | None = None
    record: Any = None
    written: Path | None = None
    seconds: float = 0.0
    text: str = ""


@dataclass
class BatchResult:
    outcomes: list[FileOutcome] = field(default_factory=list)

    @property
    def failed(self) -> list[FileOutcome]:
        return [o for o in self.outcomes if o.error is not None]

    @property
    def exit_code(self) -> ExitCode:
        """OK, or the exit code of the first file that failed."""
        failed = self.failed
        return ExitCode(failed[0].error.exit_code) if failed and failed[0].error else ExitCode.OK


def check_inputs(names: Sequence[str | Path], cache_bytes: int = CACHE_BYTES) -> list[CheckedInput]:
    """Decode every input once: missing, unreadable or undecodable files are found before
    any model is touched. Decoded audio is kept up to `cache_bytes` in all."""
    checked = []
    kept = 0
    for name in names:
        path = Path(name)
        try:
            if not str(name):  # Path("") would be the current folder
                raise NotFoundError("'': no such file (an empty file name)")
            audio = load_audio(path)
        except VoxtrayError as exc:
            checked.append(CheckedInput(path, error=exc))
            continue
        keep = kept + audio.nbytes <= cache_bytes
        kept += audio.nbytes if keep else 0
        checked.append(CheckedInput(path, audio.size / SAMPLE_RATE, audio if keep else None))
    return checked


def _chunks(audio: NDArray[np.float32], size: int = 1600) -> Any:
    for start in range(0, audio.size, size):
        yield audio[start : start + size]


class Progress:
    """One stderr line per file: where the batch is, and the real-time factor."""

    def __init__(self, stream: TextIO, total_audio_s: float, files: int) -> None:
        self.stream = stream
        self.total_audio_s = total_audio_s
        self.files = files
        self.done_audio_s = 0.0
        self.busy_s = 0.0
        self.index = 0

    def error(self, path: Path, exc: VoxtrayError) -> None:
        self.stream.write(f"voxtray: error: {_with_path(path, exc)}\n")
        self.stream.flush()

    def file_done(self, path: Path, audio_s: float, seconds: float) -> None:
        self.index += 1
        self.done_audio_s += audio_s
        self.busy_s += seconds
        share = 100 * self.done_audio_s / self.total_audio_s if self.total_audio_s else 100.0
        rtf = seconds / audio_s if audio_s else 0.0
        overall = self.busy_s / self.done_audio_s if self.done_audio_s else 0.0
        self.stream.write(
            f"[{self.index}/{self.files}] {printable(path.name)}: {audio_s:.1f} s of audio in "
            f"{seconds:.1f} s (RTF {rtf:.3f}); {share:.0f}% of {self.total_audio_s:.1f} s "
            f"done, overall RTF {overall:.3f}\n"
        )
        self.stream.flush()


def _with_path(path: Path, exc: VoxtrayError) -> str:
    text = printable(str(exc))
    shown = printable(path)
    return text if shown in text or text.startswith("'':") else f"{shown}: {text}"


def transcribe_files(
    paths: Sequence[str | Path],
    make_pipeline: Callable[[], Pipeline],
    *,
    result_json: Callable[[str, Any], dict[str, Any]],
    fmt: TranscriptFormat = TranscriptFormat.TXT,
    output_dir: Path | None = None,
    emit: Callable[[FileOutcome], None] | None = None,
    stderr: TextIO,
) -> BatchResult:
    """Check the inputs, then (only if one is usable) build the pipeline and transcribe.

    Args:
        paths: Input files, in order.
        make_pipeline: Builds the pipeline; called once, after the check, and never when
            no input is usable, so a bad file never costs a model install or load.
        result_json: The `transcribe --json` object of (file name, record).
        fmt: The format of each file's transcript.
        output_dir: Where `<input stem>.<fmt>` files go; None to hand the text to `emit`.
        emit: Called per transcribed file with its outcome (`text` is the rendered file).
        stderr: Where errors and progress lines go.
    """
    checked = check_inputs(paths)
    usable = [c for c in checked if c.error is None]
    progress = Progress(stderr, sum(c.duration_s for c in usable), len(usable))
    result = BatchResult()
    for item in checked:
        if item.error is not None:
            progress.error(item.path, item.error)
    if not usable:
        result.outcomes = [FileOutcome(c.path, error=c.error) for c in checked]
        return result
    pipeline = make_pipeline()
    taken: set[Path] = set()
    for item in checked:
        if item.error is not None:
            result.outcomes.append(FileOutcome(item.path, error=item.error))
            continue
        outcome = _transcribe_one(item, pipeline, result_json, fmt, output_dir, taken)
        result.outcomes.append(outcome)
        if outcome.error is not None:
            progress.error(item.path, outcome.error)
            continue
        progress.file_done(item.path, outcome.record.audio_s, outcome.seconds)
        if emit is not None:
            emit(outcome)
    return result


def _transcribe_one(
    item: CheckedInput,
    pipeline: Pipeline,
    result_json: Callable[[str, Any], dict[str, Any]],
    fmt: TranscriptFormat,
    output_dir: Path | None,
    taken: set[Path],
) -> FileOutcome:
    started = time.perf_counter()
    try:
        audio = item.audio if item.audio is not None else load_audio(item.path)
        item.audio = None  # let it go once used
        record = pipeline.transcribe(_chunks(audio), decode_ahead=False)
        text = render(fmt, record.segments, result_json(str(item.path), record), record.audio_s)
        written = None
        if output_dir is not None:
            written = write_text_atomic(_free_name(output_dir, item.path, fmt, taken), text)
    except VoxtrayError as exc:
        return FileOutcome(item.path, error=exc)
    return FileOutcome(item.path, None, record, written, time.perf_counter() - started, text)


def _free_name(output_dir: Path, source: Path, fmt: TranscriptFormat, taken: set[Path]) -> Path:
    """`<stem>.<fmt>`, or `<stem>-2.<fmt>` ... when another input of this run had that name."""
    target = output_path(source, output_dir, fmt)
    number = 2
    while target in taken:
        target = output_dir / f"{source.stem}-{number}.{fmt.value}"
        number += 1
    taken.add(target)
    return target
