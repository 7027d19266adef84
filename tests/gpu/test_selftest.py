"""The GPU self-test and the CPU-vs-GPU matrix. On this CPU-only machine the real runs
prove the "no GPU" path and its diagnosis; the verdict logic for GPU outcomes is checked on
recorded run statistics, and the real GPU run skips with its reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support.audio import BENCH_CLIPS as CLIPS
from tests.support.audio import SPEECH_DIR
from tests.support.gpu_faults import Fault, faulty_gpu
from tests.support.recognition import BELLY, BELLY_WER, assert_heard
from voxtray.cli.guard import repair_line
from voxtray.errors import ExitCode
from voxtray.gpu.providers import nvidia_driver_present
from voxtray.inference import gpu_fallback
from voxtray.inference.selftest import RunStats, Verdict, _judge, run_selftest
from voxtray.models.store import InstalledModel
from voxtray.ui.install_words import reinstall_words


def selftest(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "voxtray", "selftest", "--runs", "2", "--json", *args],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout)


@pytest.mark.skipif(nvidia_driver_present(), reason="this machine has an NVIDIA driver")
def test_cuda_without_a_gpu_says_no_gpu_and_names_the_missing_library(env: dict[str, str]) -> None:
    code, report = selftest(env, "--provider", "cuda")
    assert code == ExitCode.NO_GPU
    assert report["verdict"] == "no-gpu"
    assert "no NVIDIA driver" in report["cause"]
    assert report["gpu"]["requested"] == "cuda"
    assert report["gpu"]["provider"] == "cpu"  # what really ran
    # onnxruntime-gpu is installed: the fallback itself is detected with its missing file.
    assert "libcublasLt.so.13" in report["gpu"]["fallback_cause"]
    assert any("voxtray[cuda]" in fix for fix in report["fixes"])
    assert report["diagnosis"]["probe"]["fallback"] is True
    assert report["gpu_memory"] is None
    assert_heard(BELLY, report["cpu"]["text"], BELLY_WER)


def test_cpu_asked_for_is_a_pass(env: dict[str, str]) -> None:
    code, report = selftest(env, "--provider", "cpu")
    assert code == ExitCode.OK
    assert report["verdict"] == "cpu-ok"
    assert report["gpu"] is None
    assert report["cpu"]["warm_ms"] > 0
    assert len(report["cpu"]["runs_ms"]) == 2


@pytest.mark.skipif(not nvidia_driver_present(), reason="needs an NVIDIA GPU with its driver")
def test_real_gpu_is_used_and_faster(env: dict[str, str]) -> None:
    code, report = selftest(env, "--provider", "cuda", "--precision", "fp32")
    assert report["gpu"]["provider"] == "cuda", report["cause"]
    assert code == ExitCode.OK
    assert report["speedup"] > 1


def _stats(
    provider: str, warm: float, text: str = "stuff it into you", cause: str | None = None
) -> RunStats:
    return RunStats(
        "cuda" if provider != "cpu" or cause else provider,
        provider,
        900.0,
        warm,
        [warm],
        text,
        cause,
    )


def _model() -> InstalledModel:
    return InstalledModel("whisper-tiny.en", Path("/nowhere"), {"variants": {}, "files": {}})


def _diagnosis(driver_ok: bool, cause: str | None = None) -> Any:
    return SimpleNamespace(
        driver=SimpleNamespace(ok=driver_ok),
        cause=cause,
        fix="the fix",
        fixes=["the fix"],
        notes=[],
        to_json=lambda: "{}",
    )


@pytest.mark.parametrize(
    ("gpu", "driver_ok", "verdict", "code"),
    [
        (_stats("cuda", 10.0), True, Verdict.GPU_OK, ExitCode.OK),
        (_stats("cuda", 400.0), True, Verdict.GPU_SLOWER, ExitCode.GPU_SLOWER),
        (
            _stats("cpu", 300.0, cause="missing libcudnn.so.9"),
            True,
            Verdict.CPU_FALLBACK,
            ExitCode.GPU_FALLBACK,
        ),
        (_stats("cpu", 300.0, cause="no driver"), False, Verdict.NO_GPU, ExitCode.NO_GPU),
        (
            _stats("cuda", 10.0, text="completely different words here"),
            True,
            Verdict.BROKEN_MODEL,
            ExitCode.BROKEN_MODEL,
        ),
    ],
)
def test_verdicts(gpu: RunStats, driver_ok: bool, verdict: Verdict, code: ExitCode) -> None:
    cpu = _stats("cpu", 300.0)
    report = _judge(
        _model(), "cuda", "fp32", cpu, gpu, _diagnosis(driver_ok, gpu.fallback_cause), None
    )
    assert report.verdict is verdict
    assert report.exit_code == code
    if verdict is Verdict.GPU_OK:
        assert report.speedup == 30.0


def test_tensorrt_asked_and_cuda_running_is_named_as_such() -> None:
    """Without TensorRT onnxruntime goes on to CUDA: the summary names what really ran,
    not the CPU."""
    gpu = _stats("cuda", 10.0, cause="TensorRT not installed: libnvinfer.so.10 is missing")
    report = _judge(_model(), "tensorrt", "fp32", _stats("cpu", 300.0), gpu, _diagnosis(True), None)
    assert report.verdict is Verdict.OTHER_GPU_PROVIDER
    assert report.exit_code == ExitCode.GPU_FALLBACK
    assert report.summary.startswith("tensorrt was asked for but cuda ran it")
    assert "CPU ran" not in report.summary
    assert report.fixes == ["the fix"]


def test_no_words_on_speech_is_a_broken_model() -> None:
    report = _judge(_model(), "cpu", "int8", _stats("cpu", 100.0, text=""), None, None, None)
    assert report.verdict is Verdict.BROKEN_MODEL
    assert report.reinstall == report.model  # a fact; each front end words the repair
    assert report.fix is None
    assert "--force" not in report.text_report()
    assert f"fix: reinstall {report.model}" in report.text_report()
    cli = report.text_report(repair_line)
    assert f"voxtray models install {report.model} --force" in cli
    assert "Settings, Model" in report.text_report(reinstall_words)


@pytest.mark.slow
def test_matrix_json_and_chart(env: dict[str, str], tmp_path: Path) -> None:
    source = SPEECH_DIR / "manifest.tsv"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    lines = source.read_text(encoding="utf-8").splitlines()
    chosen = [lines[0]] + [line for line in lines[1:] if line.split("\t")[0] in CLIPS]
    manifest = tmp_path / "manifest.tsv"
    manifest.write_text("\n".join(chosen) + "\n")
    (tmp_path / "wav").symlink_to(SPEECH_DIR / "wav", target_is_directory=True)
    done = subprocess.run(
        [sys.executable, "-m", "voxtray", "bench", "--matrix", "--manifest", str(manifest),
         "--providers", "cpu,cuda", "--json", str(tmp_path / "m.json"),
         "--chart", str(tmp_path / "m.png")],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cells = json.loads((tmp_path / "m.json").read_text())["matrix"]
    assert {(c["precision"], c["requested"]) for c in cells} == {
        ("fp32", "cpu"),
        ("fp32", "cuda"),
        ("int8", "cpu"),
        ("int8", "cuda"),
    }
    for cell in cells:
        assert cell["broken"] is None
        # Timings are figures for the benchmark, not assertions: only their presence is checked.
        assert cell["cold_ms"] > 0
        assert cell["warm_ms"] > 0
        if not nvidia_driver_present():
            assert cell["provider"] == "cpu"
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_broken_output_flags() -> None:
    from voxtray.bench.runner import BenchClip, broken_output

    clips = [BenchClip(str(i), None, 1.0, "words") for i in range(4)]  # type: ignore[arg-type]
    assert broken_output(["a", "b", "c", "d"], clips) is None
    assert broken_output(["<unk> <unk>", "b", "c", "d"], clips) == "emits <unk> tokens"
    assert broken_output(["", "", "", "d"], clips) == "empty text on 3 of 4 speech clips"


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        ("out-of-memory", "out of GPU memory"),
        ("device-lost", "the GPU was lost"),
        ("broken-output", "cannot be text"),
    ],
)
def test_a_gpu_that_fails_while_transcribing_is_named(
    tiny_en: InstalledModel, monkeypatch: pytest.MonkeyPatch, kind: str, named: str
) -> None:
    """Fault injection through the recogniser's session seam: the real model on sessions
    that say they run on CUDA and fail from their first run (tests/support/gpu_faults.py)."""
    monkeypatch.setattr(gpu_fallback, "_BROKEN", {})
    report = run_selftest(tiny_en, "cuda", runs=1, create=faulty_gpu(Fault(kind, armed=True)))
    assert report.verdict is Verdict.GPU_FAILED
    assert report.exit_code is ExitCode.GPU_FALLBACK
    assert report.cause is not None
    assert named in report.cause
    assert report.fix is not None
    assert "restart Voxtray" in report.fix
    assert report.gpu is not None
    assert report.gpu.failure is not None
    assert "belly" in report.cpu.text.lower()
    text = report.text_report()
    assert text.startswith("verdict: gpu-failed: cuda loaded, then failed while transcribing")
    assert json.loads(json.dumps(report.to_json()))["gpu"]["failure"]["kind"] == kind
