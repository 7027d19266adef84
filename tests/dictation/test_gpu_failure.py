"""A dictation on a GPU that fails mid-session (tests/support/gpu_faults.py: the real model
on real sessions that say they run on CUDA, then run out of memory): the recording is
transcribed again on the CPU and typed, the CPU runs the next dictation, and the tray's
warning, `status --json` and the HUD's line say why."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from tests.support.dictation_rig import MakeRig
from tests.support.gpu_faults import Fault, faulty_gpu
from voxtray.config import Settings
from voxtray.inference import gpu_fallback
from voxtray.scoring.wer import word_errors
from voxtray.ui.hud import Hud

SAID = "The birch canoe slid on the smooth planks."


def test_a_dictation_on_a_gpu_that_fails_is_redone_on_the_cpu(
    dictation_rig: MakeRig, monkeypatch: pytest.MonkeyPatch, qtbot: QtBot
) -> None:
    monkeypatch.setattr(gpu_fallback, "_BROKEN", {})
    fault = Fault("out-of-memory")
    rig = dictation_rig(recognizer_factory=faulty_gpu(fault))
    dictation, output, warnings = rig.dictation, rig.output, rig.warnings
    loaded = dictation.load(Settings(provider="cuda"))
    assert loaded.provider == "cuda"
    assert "gpu_failure" not in dictation.status()

    fault.armed = True
    redone = rig.say()
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
    again = rig.say()
    assert word_errors(SAID, again.text).rate <= 0.15
    assert fault.runs == runs  # the GPU is not asked again this session

    hud = Hud()
    qtbot.addWidget(hud)
    hud.show_utterance(again)
    assert "cuda failed (out of GPU memory" in hud.summary_label.text()
    assert "running on the CPU" in hud.engine_label.text()
