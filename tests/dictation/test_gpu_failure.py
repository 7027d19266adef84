"""A dictation on a GPU that fails mid-session (tests/support/gpu_faults.py: the real model
on real sessions that say they run on CUDA, then run out of memory): the recording is
transcribed again on the CPU and typed, the CPU runs the next dictation, and the tray's
warning, `status --json` and the HUD's line say why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pytestqt.qtbot import QtBot

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.gpu_faults import Fault, faulty_gpu
from tests.support.outputs import RecordingOutput, speak
from tests.support.sounddevice import FakeSoundDevice
from voxtray.bench.wer import word_errors
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.session import Dictation
from voxtray.dictation.utterance import Utterance
from voxtray.history.store import History
from voxtray.inference import gpu_fallback
from voxtray.models.store import ModelStore
from voxtray.ui.hud import Hud

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"
SAID = "The birch canoe slid on the smooth planks."


def dictate(dictation: Dictation, fake: FakeSoundDevice) -> Utterance:
    assert dictation.start()
    fake.streams[-1].wait_for(speak(fake, read_wav(CLIP)))
    utterance = dictation.stop()
    assert utterance is not None
    return utterance


def test_a_dictation_on_a_gpu_that_fails_is_redone_on_the_cpu(
    rig: Path, model_store: ModelStore, monkeypatch: pytest.MonkeyPatch, qtbot: QtBot
) -> None:
    monkeypatch.setattr(gpu_fallback, "_BROKEN", {})
    fault = Fault("out-of-memory")
    output = RecordingOutput()
    warnings: list[str] = []
    fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=4.0)
    dictation = Dictation(
        model_store,
        History(rig / "history.sqlite3"),
        Callbacks(warning=warnings.append),
        sd_module=fake,
        output_factory=lambda name: output,
        recognizer_factory=faulty_gpu(fault),
    )
    try:
        loaded = dictation.load(Settings(provider="cuda"))
        assert loaded.provider == "cuda"
        assert "gpu_failure" not in dictation.status()

        fault.armed = True
        redone = dictate(dictation, fake)
        assert redone.delivered
        assert word_errors(SAID, redone.text).rate <= 0.15, redone.text
        assert output.typed == [redone.text + " "]
        assert redone.record.provider == "cpu"
        status = dictation.status()
        assert status["provider"] == "cpu"
        assert status["gpu_failure"]["kind"] == "out-of-memory"
        assert "out of GPU memory" in status["gpu_failure"]["cause"]
        assert "nvidia-smi" in status["gpu_failure"]["fix"]
        said = [line for line in warnings if line.startswith("the GPU failed")]
        assert len(said) == 1, warnings
        entry = dictation.history.get(redone.history_id)
        assert entry is not None
        assert entry.provider == "cpu"

        runs = fault.runs
        again = dictate(dictation, fake)
        assert word_errors(SAID, again.text).rate <= 0.15
        assert fault.runs == runs  # the GPU is not asked again this session

        hud = Hud()
        qtbot.addWidget(hud)
        hud.show_utterance(again)
        assert "cuda failed (out of GPU memory" in hud.summary_label.text()
        assert "running on the CPU" in hud.engine_label.text()
    finally:
        dictation.close()
