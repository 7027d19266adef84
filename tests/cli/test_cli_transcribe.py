"""`voxtray transcribe` as a user runs it: text on stdout, JSON lines, exit codes."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.process import run_voxtray
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard, heard
from voxtray.errors import ExitCode

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"


def write_wav(path: Path, audio: np.ndarray) -> Path:
    with wave.open(str(path), "wb") as stream:
        stream.setnchannels(1)
        stream.setsampwidth(2)
        stream.setframerate(16000)
        stream.writeframes((np.clip(audio, -1, 1) * 32767).astype(np.int16).tobytes())
    return path


@pytest.mark.parametrize("engine", ["ort", "sherpa"])
def test_json_line_per_file(env: dict[str, str], engine: str) -> None:
    second = SPEECH_DIR / "wav" / "ls_1089-134691-0000.wav"
    result = run_voxtray(
        "transcribe", str(CLIP), str(second), "--engine", engine, "--json", env=env
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["file"] for line in lines] == [str(CLIP), str(second)]
    first = lines[0]
    assert_heard(BIRCH, first["text"], SENTENCE_WER)
    assert (first["model"], first["engine"], first["provider"]) == (
        "whisper-tiny.en",
        engine,
        "cpu",
    )
    assert first["duration_s"] == pytest.approx(3.261, abs=0.01)
    assert first["timings_ms"]["stt"] > 0
    assert first["timings_ms"]["vad"] > 0


def test_plain_text_goes_to_stdout_only(env: dict[str, str]) -> None:
    result = run_voxtray("transcribe", str(CLIP), env=env)
    assert result.returncode == 0
    assert_heard(BIRCH, result.stdout, SENTENCE_WER)
    assert result.stdout.count("\n") == 1


def test_bad_files_are_one_line_errors_and_the_rest_still_runs(
    env: dict[str, str], tmp_path: Path
) -> None:
    text_file = tmp_path / "notes.wav"
    text_file.write_text("this is not audio")
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    result = run_voxtray(
        "transcribe", str(text_file), str(tmp_path / "missing.wav"), str(empty), str(CLIP), env=env
    )
    assert result.returncode == ExitCode.BAD_INPUT
    errors = [line for line in result.stderr.splitlines() if line.startswith("voxtray: error:")]
    assert len(errors) == 3
    assert "Traceback" not in result.stderr
    assert_heard(BIRCH, result.stdout, SENTENCE_WER)


def test_missing_file_alone_is_exit_3(env: dict[str, str], tmp_path: Path) -> None:
    result = run_voxtray("transcribe", str(tmp_path / "nope.wav"), env=env)
    assert result.returncode == ExitCode.NOT_FOUND


def test_unknown_model_is_exit_3(env: dict[str, str]) -> None:
    result = run_voxtray("transcribe", str(CLIP), "--model", "whisper-huge", env=env)
    assert result.returncode == ExitCode.NOT_FOUND
    assert "unknown model" in result.stderr


@pytest.mark.slow
def test_minutes_long_file_is_segmented(env: dict[str, str], tmp_path: Path) -> None:
    clips = [
        read_wav(SPEECH_DIR / "wav" / f"{name}.wav")
        for name in ("jfk_inaugural", "harvard_sb_example1")
    ]
    gap = np.zeros(16000, np.float32)
    audio = np.concatenate([part for _ in range(8) for clip in clips for part in (clip, gap)])
    path = write_wav(tmp_path / "long.wav", audio)
    result = run_voxtray("transcribe", str(path), "--json", env=env)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["duration_s"] > 120
    assert len(record["segments"]) >= 16
    assert max(s["end_s"] - s["start_s"] for s in record["segments"]) <= 25.0
    # A second of silence on both sides makes each Harvard sentence a segment of its own.
    assert sum(heard(BIRCH, s["text"], SENTENCE_WER) for s in record["segments"]) == 8
