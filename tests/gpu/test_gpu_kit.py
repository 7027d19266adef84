"""The GPU kit (packaging/gpu, tools/gpu, docs/gpu.md) rehearsed end to end on this machine,
reduced: four clips, fast compression, short serve levels. prepare's parts go through
device-run call by call, the way a lent GPU machine receives them, in a clean Python 3.12
with no project venv; every GPU step must answer "no GPU" as the product does without one."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.audio import REPO, SPEECH_DIR
from tests.support.models import ensure_installed
from tools.gpu import kit
from tools.gpu.report import summary_text
from tools.gpu.selftests import SELFTESTS, selftest_facts
from tools.gpu.sites import Kit, Scenario
from tools.gpu.steps import Runner, Step
from voxtray.models.store import ModelStore

CALL_BUDGET = 60 * 2**20  # a call may send 64 MiB; the kit keeps 4 MiB of it in hand
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


def _with_python() -> dict[str, str]:
    """The environment in which the kit's entry scripts run this interpreter."""
    return {**os.environ, "PYTHON": sys.executable, "PYTHONDONTWRITEBYTECODE": "1"}


def _one_clip_eval(folder: Path) -> Path:
    """Where the evaluation clips are not checked out: the self-test's clip, which is
    LibriSpeech 1089-134686-0001, as a one-clip manifest."""
    (folder / "eval" / "wav").mkdir(parents=True)
    shutil.copy(REPO / "resources" / "selftest.wav", folder / "eval" / "wav" / "clip.wav")
    (folder / "eval" / "manifest.tsv").write_text(
        "id\twav\tduration_s\treference\n"
        "ls_1089-134686-0001\twav/clip.wav\t3.275\tSTUFF IT INTO YOU HIS BELLY COUNSELLED HIM\n"
    )
    return folder / "eval"


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(1800)
def test_the_gpu_kit_rehearses_end_to_end(model_store: ModelStore, tmp_path: Path) -> None:
    """The kit is cut as the full one is (the parts sized from this checkout), with fewer
    clips and fast compression: every call then sends what the full kit's calls send."""
    if kit.python312() is None:
        pytest.skip("no Python 3.12 here (python3.12, pyenv's, or VOXTRAY_PY312): the GPU "
                    "machine runs 3.12, so the rehearsal needs one")  # fmt: skip
    eval_dir = SPEECH_DIR if (SPEECH_DIR / "manifest.tsv").is_file() else _one_clip_eval(tmp_path)
    for name in ("whisper-tiny.en", "silero-vad-v6"):
        ensure_installed(model_store, name)
    parts = kit.PARTS / "reduced"
    prepared = subprocess.run(
        ["bash", str(kit.ENTRY / "prepare"), "--clips", "4", "--xz-preset", "0",
         "--parts", str(parts), "--store", str(model_store.root), "--eval", str(eval_dir)],
        capture_output=True, text=True, env=_with_python(), timeout=1200, check=False,
    )  # fmt: skip
    assert prepared.returncode in (0, 3), prepared.stdout + prepared.stderr[-4000:]
    plan = json.loads((parts / "plan.json").read_text())
    planned = [call["bytes"] for call in plan["calls"]]
    assert max(planned) <= CALL_BUDGET, planned
    assert len(planned) >= 2  # the kit really was split and joined
    full_part = (parts / kit.part_name(1)).stat().st_size
    assert full_part == kit.part_room(plan["tree_bytes"])  # cut as the full kit is
    done = subprocess.run(
        ["bash", str(kit.ENTRY / "rehearse"), "--reduced", "--skip-prepare",
         "--parts", str(parts)],
        capture_output=True, text=True, env=_with_python(), timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads((parts / "rehearsal" / "rehearsal.json").read_text())
    assert report["problems"] == []
    assert list(report["steps"]) == list(STEPS)
    assert [call["bytes"] for call in report["calls"]] == planned  # measured as it is sent
    summary = (parts / "rehearsal" / "out" / "summary.txt").read_text()
    assert "no GPU on this machine" in summary
    matrix = json.loads((parts / "rehearsal" / "work" / "out" / "matrix.json").read_text())
    assert {(c["precision"], c["requested"], c["provider"]) for c in matrix["matrix"]} == {
        ("fp32", "cpu", "cpu"), ("fp32", "cuda", "cpu"), ("int8", "cpu", "cpu"),
        ("int8", "cuda", "cpu"),
    }  # fmt: skip
    verify = json.loads((parts / "rehearsal" / "work" / "out" / "models-verify.json").read_text())
    assert all(result["ok"] for result in verify["results"]), verify  # converted byte for byte


FULL_KIT_BYTES = 279_358_028  # the whisper-tiny.en kit as prepare packed it (docs/gpu.md)


def test_the_full_kit_s_calls_stay_under_60_mib_with_this_checkout() -> None:
    """Every call sends a part, SHA256SUMS and this checkout as it is now: the parts the
    full kit is cut into must leave room for all of it."""
    from tools.gpu import prepare

    checkout = kit.tree_files()
    part = prepare.part_bytes_for(checkout, None)
    assert isinstance(part, int), part
    sizes = [part] * (FULL_KIT_BYTES // part) + [FULL_KIT_BYTES % part]
    args = prepare.parse_arguments([])
    plan = prepare.plan(sizes, kit.SUMS_RESERVE, kit.tree_bytes(checkout), kit.PARTS, args)
    sent = [call["bytes"] for call in plan["calls"]]  # type: ignore[attr-defined]
    assert max(sent) <= CALL_BUDGET, sent
    assert sent[0] > kit.CALL_BUDGET - kit.SUMS_RESERVE  # no room wasted either
    estimate = plan["estimate"]
    assert estimate["fits"], estimate  # type: ignore[index]
    assert estimate["total_s"] <= 900 - estimate["kept_back_s"]  # type: ignore[index,operator]


def _scratch_checkout(folder: Path) -> Path:
    """A git checkout holding the kit's prepare, where a test can put what travels."""
    for name in ("packaging/gpu/prepare", "tools/__init__.py", "tools/gpu/__init__.py",
                 "tools/gpu/kit.py", "tools/gpu/prepare.py"):  # fmt: skip
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, folder / name)
    (folder / ".gitignore").write_text("packaging/gpu/parts/\nignored/\nshared/\n")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def _git_add(folder: Path, *names: str) -> None:
    subprocess.run(["git", "-C", str(folder), "add", *names], check=True)


def test_prepare_stops_at_once_when_the_checkout_leaves_no_room_for_a_part(
    tmp_path: Path,
) -> None:
    checkout = _scratch_checkout(tmp_path / "checkout")
    with (checkout / "recordings.tar").open("wb") as big:
        big.truncate(30 * kit.MIB)
    _git_add(checkout, ".gitignore", "packaging", "tools", "recordings.tar")
    (checkout / "scratch.wav").write_bytes(b"\0" * (15 * kit.MIB))  # untracked, not ignored
    done = subprocess.run(
        ["bash", str(checkout / "packaging" / "gpu" / "prepare")],
        capture_output=True, text=True, env=_with_python(), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "recordings.tar (31,457,280)" in done.stderr
    assert "scratch.wav (15,728,640, untracked)" in done.stderr
    assert not (checkout / "packaging" / "gpu" / "parts").exists()  # nothing built


def test_the_plan_points_at_untracked_files_that_travel_with_every_call(tmp_path: Path) -> None:
    from tools.gpu import prepare

    checkout = _scratch_checkout(tmp_path / "checkout")
    _git_add(checkout, ".gitignore", "packaging", "tools")
    assert prepare.note_untracked(kit.tree_files(checkout)) is None
    (checkout / "take-3.wav").write_bytes(b"\0" * (2 * kit.MIB))
    note = prepare.note_untracked(kit.tree_files(checkout))
    assert note is not None
    assert "2,097,152 bytes of untracked files" in note
    assert "take-3.wav (2,097,152, untracked)" in note


def test_prepare_refuses_a_parts_folder_that_every_call_would_send(tmp_path: Path) -> None:
    checkout = _scratch_checkout(tmp_path / "checkout")
    _git_add(checkout, ".gitignore", "packaging", "tools")
    done = subprocess.run(
        ["bash", str(checkout / "packaging" / "gpu" / "prepare"),
         "--parts", str(checkout / "kit-parts")],
        capture_output=True, text=True, env=_with_python(), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "git does not ignore it" in done.stderr


def test_what_travels_is_measured_as_the_device_runner_sends_it(tmp_path: Path) -> None:
    """Tracked and untracked-not-ignored files, a link as a link, shared/ even where git
    ignores it; not ignored files, nor a nested repository's files."""
    checkout = _scratch_checkout(tmp_path / "checkout")
    _git_add(checkout, ".gitignore", "packaging", "tools")
    (checkout / "notes.txt").write_bytes(b"n" * 1000)
    (checkout / "ignored").mkdir()
    (checkout / "ignored" / "big.bin").write_bytes(b"i" * 5000)
    (checkout / "shared").mkdir()
    (checkout / "shared" / "brief.md").write_bytes(b"s" * 300)
    (checkout / "peers").symlink_to(tmp_path)
    nested = checkout / "vendor"
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    (nested / "lib.py").write_bytes(b"v" * 700)
    files = {entry.name: entry for entry in kit.tree_files(checkout)}
    assert files["notes.txt"] == kit.TreeFile("notes.txt", 1000, tracked=False)
    assert files["shared/brief.md"].size == 300
    assert files["peers"].size == len(str(tmp_path))
    assert files["tools/gpu/kit.py"].tracked
    assert not {"ignored/big.bin", "vendor/lib.py"} & set(files)


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
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), kit.STASH_ENV: str(tmp_path / "stash"),
           kit.WORK_ENV: str(tmp_path / "work")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "tools.gpu.device_run", "run", "--parts", str(parts),
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


def _gpu_report(
    verdict: str, cause: str | None = None, fix: str | None = None
) -> dict[str, object]:
    """A self-test report of the shape `voxtray selftest --json` gives on a card."""
    return {
        "verdict": verdict,
        "summary": verdict,
        "cause": cause,
        "fix": fix,
        "fixes": [fix] if fix else [],
        "cpu": {"provider": "cpu", "cold_ms": 900.0, "warm_ms": 200.0},
        "gpu": {"provider": "cuda", "cold_ms": 1500.0, "warm_ms": 20.0},
        "speedup": 10.0,
        "texts_agree": True,
        "gpu_memory": {"index": 0, "name": "NVIDIA H100", "process_mb": 700.0, "total_mb": 81559.0},
        "diagnosis": {
            "gpus": [{"index": 0, "name": "NVIDIA H100", "memory_total_mb": 81559,
                      "compute_capability": "9.0"}],
            "driver": {"detail": "NVIDIA driver 580.1, supports CUDA 13.0"},
            "onnxruntime": {"detail": "onnxruntime-gpu 1.31.1 built for CUDA 13.0"},
            "placement": {"CUDAExecutionProvider": ["MatMul"], "CPUExecutionProvider": ["Shape"]},
        },
        "notes": [],
    }  # fmt: skip


def test_device_run_judges_a_card_s_reports_and_summarises_them() -> None:
    """The GPU side of device-run, which the rehearsal cannot reach: each check's
    expectation and the summary's figures, on reports shaped like a card's."""
    tests = {test.name: test for test in SELFTESTS}
    assert tests["selftest-fp32-cuda"].expect(_gpu_report("gpu-ok"))[0]
    assert not tests["selftest-fp32-cuda"].expect(_gpu_report("cpu-fallback"))[0]
    cudnn = _gpu_report(
        "cpu-fallback", "libcudnn.so.9 does not load", 'pip install "voxtray[cuda]" '
        "(or just: pip install nvidia-cudnn-cu13)",
    )  # fmt: skip
    assert tests["fallback-cudnn-unloadable"].expect(cudnn)[0]
    assert not tests["fallback-cublas-hidden"].expect(cudnn)[0]
    wrong_fix = _gpu_report(
        "cpu-fallback", "no CUDA-capable GPU", "run on a machine with an NVIDIA GPU"
    )
    assert not tests["fallback-no-visible-devices"].expect(wrong_fix)[0]
    tensorrt = _gpu_report(
        "cpu-fallback",
        "TensorRT not installed: libnvinfer.so.10 is missing",
        'pip install "tensorrt-cu13-libs==10.*" and add its tensorrt_libs folder to the path',
    )
    assert tests["selftest-fp32-tensorrt"].expect(tensorrt)[0]
    tensorrt["summary"] = "tensorrt was asked for but the CPU ran it"  # CUDA ran it
    assert not tests["selftest-fp32-tensorrt"].expect(tensorrt)[0]
    steps = []
    for name, report in (("selftest-fp32-cuda", _gpu_report("gpu-ok")),
                         ("selftest-int8-cuda", _gpu_report("gpu-slower-than-cpu")),
                         ("fallback-cudnn-unloadable", cudnn)):  # fmt: skip
        step = Step(name, "ok", 1.0)
        step.result = selftest_facts(report)
        steps.append(step)
    serve = Step("serve-cuda-fp32", "ok", 30.0)
    serve.result = {"levels": [{"clients": 16, "requests_per_s": 40.0, "p50_ms": 300.0,
                                "p95_ms": 500.0, "statuses": {"200": 600},
                                "gpu_memory": "123, 900 MiB"}]}  # fmt: skip
    text = summary_text([*steps, serve], True, 300.0)
    assert "a GPU was found" in text
    assert "card: NVIDIA H100, 81559 MiB, compute capability 9.0" in text
    assert "700.0 of 81559.0 MiB" in text
    assert "int8 on cuda: 1.00x fp32 on cuda, 0.10x int8 on the CPU" in text
    assert "serve-cuda-fp32 16 clients: 40.0 req/s" in text


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="hiding a system library needs root and unshare (as on the GPU machine)",
)
@pytest.mark.parametrize(
    ("action", "error"), [("hide", "cannot open shared object file"), ("break", "file too short")]
)
def test_a_library_the_system_loader_finds_is_hidden_for_one_command_only(
    tmp_path: Path, action: str, error: str
) -> None:
    """On the GPU machine cuBLAS and cuDNN may also sit on the system loader's path; the
    faults then apply there too, in a private mount namespace. Rehearsed with zlib."""
    if "libz.so.1" not in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout:
        pytest.skip("no libz.so.1 in the loader's cache")
    kt = Kit(tmp_path, Runner(60, tmp_path))
    step = Step("sites")
    wrapper = kt.loader_hiding(Scenario("zlib", r"^libz\.so", action), step)
    assert wrapper, step.result
    load = [sys.executable, "-c", "import ctypes; ctypes.CDLL('libz.so.1')"]
    inside = subprocess.run([*wrapper, *load], capture_output=True, text=True, check=False)
    assert inside.returncode != 0
    assert error in inside.stderr
    assert subprocess.run(load, check=False).returncode == 0  # the machine itself is untouched
