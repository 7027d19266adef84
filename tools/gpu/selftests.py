"""The self-tests device-run runs, on the card and with each fallback induced, and what
each must report."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tools.gpu.sites import Kit
from tools.gpu.steps import Step, json_in


@dataclass(frozen=True)
class SelfTest:
    name: str
    scenario: str
    provider: str
    precision: str
    expect: Callable[[dict[str, Any]], tuple[bool, str]]


def _has(report: dict[str, Any], key: str, *words: str) -> bool:
    text = json.dumps(report.get(key) or "").lower() + json.dumps(report.get("fixes") or "").lower()
    return all(word.lower() in text for word in words)


def _verdict_in(*verdicts: str) -> Callable[[dict[str, Any]], tuple[bool, str]]:
    def check(report: dict[str, Any]) -> tuple[bool, str]:
        ok = report.get("verdict") in verdicts
        return ok, f"verdict {' or '.join(verdicts)}"

    return check


def _fallback(
    cause: tuple[str, ...], fix: tuple[str, ...]
) -> Callable[[dict[str, Any]], tuple[bool, str]]:
    def check(report: dict[str, Any]) -> tuple[bool, str]:
        ok = (
            report.get("verdict") == "cpu-fallback"
            and _has(report, "cause", *cause)
            and _has(report, "fix", *fix)
        )
        return ok, f"cpu-fallback, cause naming {cause}, fix naming {fix}"

    return check


def _tensorrt_fallback(report: dict[str, Any]) -> tuple[bool, str]:
    """Without TensorRT, onnxruntime runs the model on the next provider asked for, CUDA:
    the report must say which one ran, not that the CPU did."""
    ok, wanted = _fallback(("tensorrt",), ("tensorrt-cu13-libs",))(report)
    ran = (report.get("gpu") or {}).get("provider")
    honest = ran == "cpu" or "the CPU ran it" not in str(report.get("summary"))
    return ok and honest, wanted + f", a summary that names what ran ({ran})"


SLOWER = "gpu-slower-than-cpu"
UNINSTALL = "pip uninstall -y onnxruntime onnxruntime-gpu"
SELFTESTS = (
    SelfTest("selftest-fp32-cuda", "base", "cuda", "fp32", _verdict_in("gpu-ok")),
    SelfTest("selftest-int8-cuda", "base", "cuda", "int8", _verdict_in("gpu-ok", SLOWER)),
    SelfTest(
        "selftest-fp32-tensorrt",
        "base",
        "tensorrt",
        "fp32",
        _tensorrt_fallback,
    ),
    SelfTest(
        "fallback-cudnn-unloadable",
        "cudnn-unloadable",
        "cuda",
        "fp32",
        _fallback(("cudnn",), ("nvidia-cudnn-cu13",)),
    ),
    SelfTest(
        "fallback-cublas-hidden",
        "cublas-hidden",
        "cuda",
        "fp32",
        _fallback(("cublas",), ("nvidia-cublas",)),
    ),
    SelfTest(
        "fallback-cpu-onnxruntime",
        "cpu-onnxruntime",
        "cuda",
        "fp32",
        _fallback(("CPU-only onnxruntime",), (UNINSTALL,)),
    ),
    SelfTest(
        "fallback-no-visible-devices",
        "no-visible-devices",
        "cuda",
        "fp32",
        _fallback(("CUDA_VISIBLE_DEVICES",), ("CUDA_VISIBLE_DEVICES",)),
    ),
)


def selftest_facts(report: dict[str, Any]) -> dict[str, Any]:
    """The figures and words the summary keeps from one self-test report."""
    diagnosis = report.get("diagnosis") or {}
    gpus = diagnosis.get("gpus") or []
    gpu = report.get("gpu") or {}
    cpu = report.get("cpu") or {}
    return {
        "verdict": report.get("verdict"),
        "summary": report.get("summary"),
        "cause": report.get("cause"),
        "fix": report.get("fix"),
        "fixes": report.get("fixes"),
        "ran_on": gpu.get("provider"),
        "gpu": gpus[0] if gpus else None,
        "driver": (diagnosis.get("driver") or {}).get("detail"),
        "onnxruntime": (diagnosis.get("onnxruntime") or {}).get("detail"),
        "speedup": report.get("speedup"),
        "cpu_cold_ms": cpu.get("cold_ms"),
        "cpu_warm_ms": cpu.get("warm_ms"),
        "gpu_cold_ms": gpu.get("cold_ms"),
        "gpu_warm_ms": gpu.get("warm_ms"),
        "gpu_memory": report.get("gpu_memory"),
        "placement": diagnosis.get("placement"),
        "notes": report.get("notes"),
        "texts_agree": report.get("texts_agree"),
    }


def run_selftest(kt: Kit, test: SelfTest, runs: int, gpu: bool, record: Step, limit: float) -> None:
    out = kt.runner.out / f"{test.name}.json"
    argv = kt.voxtray(
        test.scenario,
        "selftest",
        "--model",
        kt.info["whisper_models"][0],
        "--provider",
        test.provider,
        "--precision",
        test.precision,
        "--runs",
        str(runs),
        "--json",
    )
    code = kt.runner.command(test.name, argv, kt.env(test.scenario), limit, out)
    text = out.read_text(encoding="utf-8")
    if not text.strip():
        raise RuntimeError(f"exit {code}, no report; see {test.name}.log")
    report = json_in(text)
    facts = selftest_facts(report)
    facts["exit_code"] = code
    met, wanted = test.expect(report) if gpu else (report.get("verdict") == "no-gpu", "no-gpu")
    facts["expected"], facts["as_expected"] = wanted, met
    record.result = facts
    record.detail = f"{facts['verdict']}" + ("" if met else f" (expected {wanted})")
