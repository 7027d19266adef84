"""Many files at once: inputs checked before any model is touched, a bad file reported and
the rest done, files written per input, progress and RTF on stderr."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.audio import Clip
from tests.support.models import ensure_installed
from tests.support.subtitles import parse_srt, parse_vtt
from voxtray.choices import TranscriptFormat
from voxtray.errors import ExitCode
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.pipeline import DictationPipeline
from voxtray.inference.vad import SileroVad
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.transcripts.batch import FileOutcome, check_inputs, transcribe_files


def result_json(name: str, record: Any) -> dict[str, Any]:
    return {"file": name, "text": record.text, "duration_s": record.audio_s}


def never() -> DictationPipeline:
    raise AssertionError("a model was loaded for inputs that are all bad")


@pytest.fixture
def bad_files(tmp_path: Path) -> list[Path]:
    text = tmp_path / "notes.wav"
    text.write_text("this is not audio\n")
    empty = tmp_path / "empty.flac"
    empty.write_bytes(b"")
    return [text, tmp_path / "missing.wav", empty, tmp_path]


def test_all_bad_inputs_fail_fast_without_a_model(bad_files: list[Path]) -> None:
    stderr = io.StringIO()
    result = transcribe_files(bad_files, never, result_json=result_json, stderr=stderr)
    lines = stderr.getvalue().splitlines()
    assert len(lines) == len(bad_files)
    assert all(line.startswith("voxtray: error: ") for line in lines)
    assert "missing.wav: no such file" in lines[1]
    assert "empty file" in lines[2]
    assert "is a directory" in lines[3]
    assert result.exit_code == ExitCode.BAD_INPUT
    assert [o.path for o in result.failed] == bad_files


def test_check_keeps_decoded_audio_only_within_its_budget(eval_clips: list[Clip]) -> None:
    paths = [clip.path for clip in eval_clips[:2]]
    assert all(c.audio is not None for c in check_inputs(paths))
    kept = check_inputs(paths, cache_bytes=0)
    assert all(c.audio is None and c.error is None and c.duration_s > 1 for c in kept)


@pytest.fixture(scope="module")
def pipeline(model_store: ModelStore, tiny_en: InstalledModel) -> DictationPipeline:
    vad = ensure_installed(model_store, "silero-vad-v6").variant_files("fp32")["model"]
    recognizer = create_recognizer(tiny_en, EngineChoice(engine="sherpa", provider="cpu"))
    return DictationPipeline(SileroVad(vad), recognizer)


def test_a_bad_file_among_good_ones(
    eval_clips: list[Clip], pipeline: DictationPipeline, bad_files: list[Path], tmp_path: Path
) -> None:
    short = sorted(eval_clips, key=lambda clip: clip.duration_s)[:2]
    # Two inputs with one name in different folders must not overwrite each other.
    twin = tmp_path / "twin" / short[0].path.name
    twin.parent.mkdir()
    shutil.copy(short[0].path, twin)
    inputs = [short[0].path, bad_files[0], short[1].path, twin]
    built: list[bool] = []

    def make() -> DictationPipeline:
        built.append(True)
        return pipeline

    stderr = io.StringIO()
    out = tmp_path / "out"
    result = transcribe_files(
        inputs,
        make,
        result_json=result_json,
        fmt=TranscriptFormat.SRT,
        output_dir=out,
        stderr=stderr,
    )
    assert built == [True]
    assert result.exit_code == ExitCode.BAD_INPUT
    assert [o.path for o in result.failed] == [bad_files[0]]
    lines = stderr.getvalue().splitlines()
    # The bad file is reported first, before any transcription.
    assert lines[0].startswith("voxtray: error: ")
    assert "notes.wav" in lines[0]
    assert [line.split("]")[0] for line in lines[1:]] == ["[1/3", "[2/3", "[3/3"]
    assert "RTF" in lines[-1]
    assert "100% of" in lines[-1]
    written = sorted(p.name for p in out.iterdir())
    stem = short[0].path.stem
    assert written == sorted([f"{stem}.srt", f"{stem}-2.srt", f"{short[1].path.stem}.srt"])
    for outcome in result.outcomes:
        if outcome.error is None:
            assert outcome.written is not None
            cues = parse_srt(outcome.written.read_text())
            assert " ".join(c.text for c in cues) == " ".join(outcome.record.text.split())


def test_formats_to_the_caller(eval_clips: list[Clip], pipeline: DictationPipeline) -> None:
    clip = min(eval_clips, key=lambda c: c.duration_s)
    texts: dict[TranscriptFormat, str] = {}
    for fmt in TranscriptFormat:

        def keep(outcome: FileOutcome, fmt: TranscriptFormat = fmt) -> None:
            texts[fmt] = outcome.text

        transcribe_files(
            [clip.path],
            lambda: pipeline,
            result_json=result_json,
            fmt=fmt,
            emit=keep,
            stderr=io.StringIO(),
        )
    assert json.loads(texts[TranscriptFormat.JSON])["file"] == str(clip.path)
    assert parse_vtt(texts[TranscriptFormat.VTT])
    assert parse_srt(texts[TranscriptFormat.SRT])
    assert texts[TranscriptFormat.TXT].strip()
