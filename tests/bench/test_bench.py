"""`voxtray bench` end to end on a small manifest: the report's shape and its arithmetic.
Speed itself is judged by reading the numbers (docs/benchmarks.md), not asserted here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.audio import BENCH_CLIPS, SPEECH_DIR
from tests.support.models import ensure_installed
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from voxtray.models.store import ModelStore

CLIPS = BENCH_CLIPS


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    source = SPEECH_DIR / "manifest.tsv"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    lines = source.read_text(encoding="utf-8").splitlines()
    chosen = [lines[0]] + [line for line in lines[1:] if line.split("\t")[0] in CLIPS]
    (tmp_path / "wav").mkdir()
    for line in chosen[1:]:
        wav = line.split("\t")[1]
        shutil.copy(SPEECH_DIR / wav, tmp_path / wav)
    path = tmp_path / "manifest.tsv"
    path.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_bench_reports_every_engine_and_the_peer(
    manifest: Path, tmp_path: Path, model_store: ModelStore
) -> None:
    pytest.importorskip("faster_whisper")
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    out = tmp_path / "bench.json"
    env = {**os.environ, "VOXTRAY_HOME": str(model_store.root.parent)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "voxtray",
            "bench",
            "--manifest",
            str(manifest),
            "--repeats",
            "1",
            "--streaming-clip",
            "",
            "--json",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    rows = {row["name"]: row for row in report["results"]}
    assert set(rows) == {"faster-whisper", "ort", "sherpa"}
    assert report["clips"] == len(CLIPS)
    for name, row in rows.items():
        assert row["provider"] == "cpu"
        assert 0.0 <= row["wer"] <= 0.5, name
        assert row["words"] == rows["faster-whisper"]["words"] > 15
        assert row["median_ms"] > 0
        assert row["p90_ms"] >= row["median_ms"]
        assert row["peak_rss_mb"] > 50
    for name in ("ort", "sherpa"):
        expected = rows[name]["median_ms"] / rows["faster-whisper"]["median_ms"]
        assert rows[name]["ratio_to_peer"] == pytest.approx(expected, rel=1e-2)
        checks = report["checks"][name]
        assert checks["silence_text"] == checks["noise_text"] == ""
    assert_heard(BIRCH, report["texts"]["ort"]["harvard_sb_example1"], SENTENCE_WER)
