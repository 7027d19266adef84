"""`voxtray devices`: real PortAudio devices on a PulseAudio virtual microphone, a fake
sound module for the edge cases, and GPUs through NVML (none here, so faked at its seam)."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.support.pulse import VirtualMicrophone
from voxtray.cli import devices
from voxtray.cli.main import main
from voxtray.gpu import nvml
from voxtray.gpu.nvml import GpuInfo, GpuMemory


def test_virtual_microphone_is_listed_with_its_rates(
    virtual_mic: VirtualMicrophone,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mics, reason = devices.list_microphones()
    assert reason is None
    by_name = {mic.name: mic for mic in mics}
    assert "pulse" in by_name, by_name
    assert 16000 in by_name["pulse"].rates
    assert sum(mic.default for mic in mics) == 1

    assert main(["devices", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert "pulse" in [mic["name"] for mic in found["microphones"]]
    assert found["microphones_unavailable"] is None

    assert main(["devices"]) == 0
    text = capsys.readouterr().out
    assert "Microphones:" in text
    assert "pulse" in text
    assert "16k" in text


class FakeSoundDevice:
    """query_devices / default / check_input_settings, as sounddevice answers them."""

    def __init__(self) -> None:
        self.default = type("Default", (), {"device": [2, 0]})()

    def query_devices(self, kind: str | None = None) -> Any:
        devices = [
            {"name": "speakers", "max_input_channels": 0, "hostapi": 0},
            {"name": "usb mic", "max_input_channels": 1, "hostapi": 0, "default_samplerate": 48000},
            {"name": "headset", "max_input_channels": 2, "hostapi": 1, "default_samplerate": 16000},
        ]
        if kind == "input":  # the device sounddevice would open: its default setting first
            index = self.default.device[0]
            return {**devices[index], "index": index}
        return devices

    def query_hostapis(self, index: int) -> dict[str, Any]:
        return {"name": ["ALSA", "JACK"][index]}

    def check_input_settings(self, device: int, samplerate: int, **_: Any) -> None:
        if device == 1 and samplerate != 48000:
            raise ValueError("Invalid sample rate")


def test_inputs_only_with_the_rates_each_accepts() -> None:
    mics, reason = devices.list_microphones(FakeSoundDevice())
    assert reason is None
    assert [(m.index, m.name, m.host_api, m.default) for m in mics] == [
        (1, "usb mic", "ALSA", False),
        (2, "headset", "JACK", True),
    ]
    assert mics[0].rates == [48000]
    assert mics[1].rates == list(devices.PROBE_RATES)


def test_default_from_portaudio_when_none_is_set() -> None:
    class PortAudioDefault(FakeSoundDevice):
        def __init__(self) -> None:
            self.default = type("Default", (), {"device": [-1, -1]})()

        def query_devices(self, kind: str | None = None) -> Any:
            devices = super().query_devices()
            return {**devices[1], "index": 1} if kind == "input" else devices

    mics, _ = devices.list_microphones(PortAudioDefault())
    assert [m.name for m in mics if m.default] == ["usb mic"]


def test_portaudio_failure_is_a_reason_not_a_crash() -> None:
    class Broken(FakeSoundDevice):
        def query_devices(self, kind: str | None = None) -> Any:
            raise RuntimeError("Error querying device -1")

    assert devices.list_microphones(Broken()) == (
        [],
        "cannot list audio devices: Error querying device -1",
    )


@pytest.mark.parametrize(
    ("raised", "hint"),
    [(OSError("PortAudio library not found"), True), (ImportError("No module named x"), False)],
)
def test_sounddevice_that_cannot_load_is_a_reason(
    monkeypatch: pytest.MonkeyPatch, raised: Exception, hint: bool
) -> None:
    """No PortAudio library (OSError) names the package to install; a broken install
    (ImportError) says what failed without a wrong hint. Either way a reason, not a crash."""

    def failing_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "sounddevice":
            raise raised
        return real_import(name, *args, **kwargs)

    real_import = builtins.__import__
    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr("builtins.__import__", failing_import)
    mics, reason = devices.list_microphones()
    assert mics == []
    assert reason is not None
    assert reason.startswith(f"cannot use the microphone: {raised}")
    assert ("libportaudio2" in reason) == hint


def test_gpus_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    cards = [GpuInfo(0, "NVIDIA H100", 81559, "9.0"), GpuInfo(1, "RTX 4090", 24564, "8.9")]
    monkeypatch.setattr(nvml, "gpus", lambda: cards)
    monkeypatch.setattr(
        nvml,
        "gpu_memory",
        lambda i: GpuMemory(0, "NVIDIA H100", 0.0, 1024.4, 81559.0) if i == 0 else None,
    )
    gpus, reason = devices.list_gpus()
    assert reason is None
    assert [(g.index, g.name, g.total_mb, g.used_mb, g.compute_capability) for g in gpus] == [
        (0, "NVIDIA H100", 81559, 1024, "9.0"),
        (1, "RTX 4090", 24564, None, "8.9"),
    ]
    text = devices.format_inventory(devices.Inventory(gpus=gpus, driver="580.65 (CUDA 13.0)"))
    assert "[0] NVIDIA H100 (compute 9.0), 1024 of 81559 MiB used" in text
    assert "[1] RTX 4090 (compute 8.9), ? of 24564 MiB used" in text


def test_command_line_without_gpu_or_sound_card() -> None:
    """A real process on this machine: no NVIDIA driver, so no GPU and a reason."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULSE")}
    result = subprocess.run(
        [sys.executable, "-m", "voxtray", "devices", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert set(found) == {
        "microphones",
        "microphones_unavailable",
        "gpus",
        "gpus_unavailable",
        "driver",
    }
    if not nvml.gpus():
        assert found["gpus"] == []
        assert found["gpus_unavailable"]
    else:
        assert found["gpus"][0]["total_mb"] > 0
