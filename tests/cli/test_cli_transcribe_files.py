"""`voxtray transcribe` for files as people use it: inputs checked before any model is
installed, subtitles and JSON written per input, progress and RTF on stderr."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.support.audio import clip_path
from tests.support.process import run_voxtray
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.subtitles import check_timeline, parse_srt, parse_vtt
from voxtray.errors import ExitCode

CLIP = clip_path("harvard_sb_example1")

SECOND = CLIP.parent / "ls_1089-134691-0000.wav"


def test_a_bad_file_on_a_machine_without_models_fails_at_once(tmp_path: Path) -> None:
    """No model install (the index is unreachable) and no model load for a file that is not
    audio: one line, exit 7, nothing written to the data folder."""
    notes = tmp_path / "notes.wav"
    notes.write_text("not audio at all\n")
    home = tmp_path / "home"
    environ = {
        **os.environ,
        "VOXTRAY_HOME": str(home),
        "VOXTRAY_PYPI_INDEX": "http://127.0.0.1:9/simple/",
    }
    environ.pop("VOXTRAY_CATALOG", None)
    started = time.perf_counter()
    result = run_voxtray("transcribe", str(notes), env=environ)
    elapsed = time.perf_counter() - started
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert result.stderr.splitlines() == [
        line for line in result.stderr.splitlines() if line.startswith("voxtray: error: ")
    ]
    assert len(result.stderr.splitlines()) == 1
    assert "notes.wav" in result.stderr
    assert "installing" not in result.stderr
    assert result.stdout == ""
    assert not (home / "models").exists() or not any((home / "models").iterdir())
    print(f"\nrefused in {elapsed:.1f} s")


def test_subtitles_per_input_with_a_bad_one_among_them(
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    bad = tmp_path / "broken.flac"
    bad.write_bytes(b"fLaC" + os.urandom(200))
    out = tmp_path / "subs"
    result = run_voxtray(
        "transcribe",
        str(CLIP),
        str(bad),
        str(SECOND),
        "--format",
        "srt",
        "--output-dir",
        str(out),
        env=env,
    )
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("voxtray: error: ")
    assert "broken.flac" in lines[0]
    progress = [line for line in lines if line.startswith("[")]
    assert [line.split("]")[0] for line in progress] == ["[1/2", "[2/2"]
    assert all("RTF" in line for line in progress)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{CLIP.stem}.srt", f"{SECOND.stem}.srt"]
    )
    cues = parse_srt((out / f"{CLIP.stem}.srt").read_text())
    check_timeline(cues, 3.3)
    assert_heard(BIRCH, " ".join(c.text for c in cues), SENTENCE_WER)


def test_vtt_to_stdout_and_json_with_output_paths(
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    vtt = run_voxtray("transcribe", str(CLIP), "--format", "vtt", env=env)
    assert vtt.returncode == 0, vtt.stderr
    assert_heard(BIRCH, " ".join(c.text for c in parse_vtt(vtt.stdout)), SENTENCE_WER)

    out = tmp_path / "json"
    rows = run_voxtray(
        "transcribe", str(CLIP), "--format", "json", "--output-dir", str(out), "--json", env=env
    )
    assert rows.returncode == 0, rows.stderr
    [row] = [json.loads(line) for line in rows.stdout.splitlines()]
    assert row["output"] == str(out / f"{CLIP.stem}.json")
    written = json.loads(Path(row["output"]).read_text())
    assert written["text"] == row["text"]
    assert written["provider"] == "cpu"
    assert written["segments"]
