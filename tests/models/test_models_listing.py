"""`voxtray models list`: the real catalog, sorted, with the facts a user chooses by, and
installed models marked."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.process import run_voxtray
from tests.support.store import Setup
from voxtray.models.catalog import load_catalog
from voxtray.models.listing import model_rows
from voxtray.models.store import ModelStore

WANTED = {
    "parakeet-tdt-0.6b-v2",
    "parakeet-tdt-0.6b-v3",
    "parakeet-tdt-ctc-110m",
    "moonshine-tiny",
    "moonshine-base",
    "sherpa-whisper-small.en",
    "sherpa-whisper-distil-small.en",
    "sherpa-whisper-turbo",
}


def test_real_catalog_rows(tmp_path: Path) -> None:
    env = {**os.environ, "VOXTRAY_HOME": str(tmp_path)}
    env.pop("VOXTRAY_CATALOG", None)
    result = run_voxtray("models", "list", "--json", env=env)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["models"]
    names = [row["name"] for row in rows]
    assert set(names) >= WANTED
    stt = [row["name"] for row in rows if row["family"] != "silero-vad"]
    assert names == [*sorted(stt), "silero-vad-v6"]
    by_name = {row["name"]: row for row in rows}
    assert len(by_name["parakeet-tdt-0.6b-v3"]["languages"]) == 25
    assert by_name["parakeet-tdt-0.6b-v2"]["languages"] == ["en"]
    for row in rows:
        assert row["license"], row["name"]
        assert row["size_mb"] > 0, row["name"]
        assert row["languages"], row["name"]
        assert row["recommended_provider"] in ("cpu", "cuda"), row["name"]
        assert isinstance(row["streaming"], bool)
        assert not row["installed"]
        if "int8" in row["precisions"]:
            assert row["precision_cpu"] == "int8", row["name"]
        if "fp32" in row["precisions"] and row["family"] != "silero-vad":
            assert row["precision_cuda"] == "fp32", row["name"]
        if row["pinned"]:
            assert row["sha256_source"], row["name"]
        assert row["needs_consent"] == (not row["pinned"])
    # int8-only models run best on the CPU (int8 kernels fall back under CUDA).
    assert by_name["parakeet-tdt-0.6b-v2"]["recommended_provider"] == "cpu"
    assert by_name["parakeet-tdt-ctc-110m-fp32"]["recommended_provider"] == "cuda"
    assert by_name["parakeet-tdt-0.6b-v2"]["download_mb"] == 482.5


def test_installed_models_are_marked(setup: Setup, tmp_path: Path) -> None:
    env = {**os.environ, "VOXTRAY_HOME": str(tmp_path / "home")}
    assert run_voxtray("models", "install", "demo-vad", env=env).returncode == 0
    text = run_voxtray("models", "list", env=env)
    assert text.returncode == 0, text.stderr
    marked = [line for line in text.stdout.splitlines() if line.startswith("*")]
    assert len(marked) == 1, text.stdout
    assert " demo-vad " in marked[0]
    assert "* installed" in text.stderr
    rows = model_rows(ModelStore(tmp_path / "home" / "models", load_catalog(setup.catalog_path)))
    assert [row.name for row in rows if row.installed] == ["demo-vad"]
    assert rows[-1].name == "demo-vad"  # the VAD comes last
