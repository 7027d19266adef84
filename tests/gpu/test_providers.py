"""Provider lists and the GPU index: the options onnxruntime is given, the settings that reach
them, a refused index, and what inference code imports. No GPU needed: NVML's card count is
faked where a test needs cards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support.audio import REPO
from voxtray.choices import Provider
from voxtray.config import Settings
from voxtray.errors import ExitCode, VoxtrayError
from voxtray.gpu import nvml
from voxtray.gpu.builds import CPU, CUDA, TENSORRT
from voxtray.gpu.providers import ort_providers, provider_names, resolve_request
from voxtray.inference.engines import EngineChoice
from voxtray.models.store import InstalledModel


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvml, "gpu_count", lambda: 2)


def test_gpu_providers_carry_the_device_id() -> None:
    assert ort_providers(Provider.CUDA, 1) == [(CUDA, {"device_id": "1"}), CPU]
    assert ort_providers(Provider.TENSORRT, 1) == [
        (TENSORRT, {"device_id": "1"}),
        (CUDA, {"device_id": "1"}),
        CPU,
    ]
    assert ort_providers(Provider.CUDA) == [(CUDA, {"device_id": "0"}), CPU]
    assert ort_providers(Provider.CPU, 1) == [CPU]
    assert provider_names(ort_providers(Provider.TENSORRT, 1)) == [TENSORRT, CUDA, CPU]


def test_cuda_numbers_cards_as_nvml_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    ort_providers(Provider.CUDA, 0)
    assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    ort_providers(Provider.CUDA, 0)
    assert os.environ["CUDA_DEVICE_ORDER"] == "FASTEST_FIRST"  # the user's choice stays


def test_unknown_provider_is_a_usage_error() -> None:
    with pytest.raises(VoxtrayError, match="choose one of auto, cpu, cuda, tensorrt") as error:
        resolve_request("opencl")
    assert error.value.exit_code == ExitCode.USAGE
    assert resolve_request("cuda") is Provider.CUDA


def test_gpu_index_reaches_the_engine_choice() -> None:
    assert EngineChoice.of(Settings(gpu_index=1)).gpu_index == 1
    assert EngineChoice.of(SimpleNamespace(provider="cuda")).gpu_index == 0


def test_index_beyond_the_cards_is_refused(two_gpus: None) -> None:
    assert nvml.index_problem(1) is None
    problem = nvml.index_problem(2)
    assert problem == "GPU index 2 does not exist: this machine has 2 NVIDIA GPUs (0-1)"
    assert nvml.index_problem(1, count=1) == (
        "GPU index 1 does not exist: this machine has 1 NVIDIA GPU (index 0)"
    )
    with pytest.raises(VoxtrayError, match="GPU index 2 does not exist") as error:
        ort_providers(Provider.CUDA, 2)
    assert error.value.exit_code == ExitCode.USAGE
    assert ort_providers(Provider.CPU, 2) == [CPU]  # no card is used, nothing to refuse


def test_no_driver_judges_no_index() -> None:
    if nvml.gpu_count():
        pytest.skip("NVML sees GPUs here")
    assert nvml.index_problem(7) is None
    assert nvml.gpu_memory(7) is None


def test_sherpa_engine_refuses_a_missing_card(two_gpus: None, tiny_en: InstalledModel) -> None:
    from voxtray.inference.engines import create_recognizer

    choice = EngineChoice(engine="sherpa", provider="cuda", gpu_index=3)
    with pytest.raises(VoxtrayError, match="GPU index 3 does not exist"):
        create_recognizer(tiny_en, choice)


def test_selftest_refuses_a_missing_card(two_gpus: None, tiny_en: InstalledModel) -> None:
    from voxtray.inference.selftest import run_selftest

    with pytest.raises(VoxtrayError, match="GPU index 5 does not exist"):
        run_selftest(tiny_en, "cuda", gpu_index=5, runs=1)


def test_hud_names_a_missing_card(two_gpus: None, qtbot: Any) -> None:
    from voxtray.ui.hud import Hud

    hud = Hud(gpu_index=4)
    qtbot.addWidget(hud)
    assert hud.gpu_label.text() == (
        "GPU: GPU index 4 does not exist: this machine has 2 NVIDIA GPUs (0-1)"
    )


_INFERENCE = """
import json, sys
from pathlib import Path
import numpy as np
WATCHED = ("onnx", "voxtray.gpu.diagnose", "voxtray.gpu.probe")
from voxtray.inference.recognizers.ort_whisper import OrtWhisperRecognizer
from voxtray.gpu.providers import ort_providers
imported = {name for name in WATCHED if name in sys.modules}
encoder, decoder, tokens = map(Path, sys.argv[1:4])
recognizer = OrtWhisperRecognizer(encoder, decoder, tokens, providers=ort_providers("cuda", 0))
recognizer.transcribe(np.zeros(16000, np.float32) + 0.01)
print(json.dumps({
    "at_import": sorted(imported),
    "after": sorted(n for n in WATCHED if n in sys.modules),
    "provider": recognizer.provider,
    "fallback_cause": recognizer.fallback_cause,
}))
"""


def test_ort_inference_never_loads_onnx_or_the_diagnosis(tiny_en: InstalledModel) -> None:
    files = tiny_en.variant_files("int8")
    args = [str(files[role]) for role in ("encoder", "decoder", "tokens")]
    done = subprocess.run(
        [sys.executable, "-c", _INFERENCE, *args],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["at_import"] == []
    assert report["after"] == []
    if report["provider"] == "cpu":  # the fallback was explained from the native log
        assert report["fallback_cause"]
