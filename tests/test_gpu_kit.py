"""The GPU kit (packaging/gpu, docs/gpu.md) rehearsed end to end on this machine, reduced:
four clips, fast compression, short serve levels. prepare's parts go through device-run
call by call, the way a lent GPU machine receives them, in a clean Python 3.12 with no
project venv; every GPU step must answer "no GPU" as the product does without one."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EVAL_DIR, REPO, ensure_installed
from voxtray.models.store import ModelStore

sys.path.insert(0, str(REPO / "packaging" / "gpu"))

import kit

STEPS = (
    "stash",
    "environment",
    "join-extract",
    "install",
    "sites",
    "convert-models",
    "selftest-fp32-cuda",
    "selftest-int8-cuda",
    "selftest-fp32-tensorrt",
    "fallback-cudnn-unloadable",
    "fallback-cublas-hidden",
    "fallback-cpu-onnxruntime",
    "fallback-no-visible-devices",
    "bench-matrix",
    "serve-cuda-fp32",
    "serve-cpu-int8",
)


@pytest.mark.slow
@pytest.mark.network
def test_the_gpu_kit_rehearses_end_to_end(model_store: ModelStore) -> None:
    if kit.python312() is None:
        pytest.skip("no Python 3.12 here (python3.12, pyenv's, or VOXTRAY_PY312): the GPU "
                    "machine runs 3.12, so the rehearsal needs one")  # fmt: skip
    if not (EVAL_DIR / "manifest.tsv").is_file():
        pytest.skip(f"evaluation audio not found at {EVAL_DIR}")
    for name in ("whisper-tiny.en", "silero-vad-v6"):
        ensure_installed(model_store, name)
    parts = kit.PARTS / "reduced"
    done = subprocess.run(
        [sys.executable, str(kit.HERE / "rehearse.py"), "--reduced", "--parts", str(parts),
         "--prepare-arg=--store", f"--prepare-arg={model_store.root}",
         "--prepare-arg=--eval", f"--prepare-arg={EVAL_DIR}"],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads((parts / "rehearsal" / "rehearsal.json").read_text())
    assert report["problems"] == []
    assert list(report["steps"]) == list(STEPS)
    plan = json.loads((parts / "plan.json").read_text())
    assert len(report["calls"]) == len(plan["calls"]) >= 2  # the kit really was split and joined
    assert all(call["bytes"] <= kit.CALL_LIMIT for call in report["calls"])
    summary = (parts / "rehearsal" / "out" / "summary.txt").read_text()
    assert "no GPU on this machine" in summary
    matrix = json.loads((parts / "rehearsal" / "work" / "out" / "matrix.json").read_text())
    assert {(c["precision"], c["requested"], c["provider"]) for c in matrix["matrix"]} == {
        ("fp32", "cpu", "cpu"), ("fp32", "cuda", "cpu"), ("int8", "cpu", "cpu"),
        ("int8", "cuda", "cpu"),
    }  # fmt: skip
    verify = json.loads((parts / "rehearsal" / "work" / "out" / "models-verify.json").read_text())
    assert all(result["ok"] for result in verify["results"]), verify  # converted byte for byte


def test_a_call_plan_with_a_part_missing_says_which(tmp_path: Path) -> None:
    """A machine given back between calls loses the stash: device-run must name what is
    missing instead of failing somewhere later."""
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-1").write_bytes(b"one")
    (parts / kit.SUMS).write_text(
        "# kit 00 6 2\n"
        f"{hashlib.sha256(b'one').hexdigest()}  part-1\n"
        f"{hashlib.sha256(b'two').hexdigest()}  part-2\n"
    )
    env = {"PATH": "/usr/bin:/bin", kit.STASH_ENV: str(tmp_path / "stash"),
           kit.WORK_ENV: str(tmp_path / "work")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(kit.HERE / "device_run.py"), "run", "--parts", str(parts),
         "--out", str(tmp_path / "out"), "--budget-s", "120"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    stash = summary["steps"][0]
    assert stash["status"] == "failed"
    assert stash["result"]["have"] == ["part-1"]
    assert stash["result"]["missing"] == ["part-2"]
    assert [s["name"] for s in summary["steps"]] == ["stash", "environment"]
