"""The Qt layer, offscreen with pytest-qt: the app wired to the real model through the
inference worker thread, the fallback window, the HUD and the settings dialog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.config import Settings, SettingsStore
from app.control import send
from app.dictation import Utterance
from app.evaluation.normalizer import normalize_english
from app.history import History
from app.models.store import ModelStore
from tests.conftest import EVAL_DIR, ensure_installed, read_wav
from tests.test_dictation import RecordingOutput, speak
from tests.test_microphone import FakeSoundDevice

pytest.importorskip("pytestqt")
CLIP = EVAL_DIR / "wav" / "harvard_sb_example1.wav"


@pytest.fixture
def installed_store(model_store: ModelStore) -> ModelStore:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    return model_store


@pytest.fixture
def voxtray(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed_store: ModelStore
) -> Any:
    from app.ui.app import VoxtrayApp

    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path))
    fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=4.0)
    output = RecordingOutput()
    app = VoxtrayApp(
        installed_store,
        SettingsStore(tmp_path / "settings.json"),
        History(tmp_path / "history.sqlite3"),
        sd_module=fake,
        output_factory=lambda name: output,
        use_hotkeys=False,
    )
    with qtbot.waitSignal(app.worker.loaded, timeout=120_000):
        pass
    app.fake, app.output = fake, output
    yield app
    app.quit()


def test_dictation_through_the_control_socket_and_worker_thread(qtbot: Any, voxtray: Any) -> None:
    assert voxtray.running
    assert voxtray.tray.window is not None  # offscreen: no system tray, so the window shows
    assert "ready" in voxtray.tray.window.state_label.text()
    assert send("start")["state"] == "listening"
    qtbot.waitUntil(lambda: "listening" in voxtray.tray.window.state_label.text())
    voxtray.fake.streams[-1].wait_for(speak(voxtray.fake, read_wav(CLIP)))
    with qtbot.waitSignal(voxtray.worker.utterance, timeout=60_000) as blocker:
        send("stop")
    utterance: Utterance = blocker.args[0]
    assert normalize_english(utterance.text) == "the birch canoe slid on the smooth planks"
    assert voxtray.output.typed == [utterance.text + " "]
    qtbot.waitUntil(lambda: send("status")["state"] == "ready")
    status = send("status")
    assert status["last"]["text"] == utterance.text
    assert status["provider"] == "cpu"
    assert voxtray.menu.recent_menu.isEnabled()
    assert voxtray.menu.recent_menu.actions()[0].text().startswith(utterance.text[:20])
    assert "stt" in voxtray.hud.latency_label.text()


def test_second_instance_brings_the_first_forward(voxtray: Any, tmp_path: Path) -> None:
    from app.ui.app import run_app

    assert run_app() == 0  # found the running instance through the socket and left


def test_hud_never_takes_focus(qtbot: Any) -> None:
    from app.ui.hud import Hud

    hud = Hud()
    qtbot.addWidget(hud)
    flags = hud.windowFlags()
    assert flags & Qt.WindowType.WindowDoesNotAcceptFocus
    assert flags & Qt.WindowType.WindowStaysOnTopHint
    assert flags & Qt.WindowType.FramelessWindowHint
    assert hud.testAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
    assert hud.focusPolicy() == Qt.FocusPolicy.NoFocus
    assert hud.gpu_label.text() == "GPU: no GPU"
    hud.set_state("listening")
    assert "listening" in hud.state_label.text()


def test_settings_dialog_saves_and_validates(
    qtbot: Any, tmp_path: Path, installed_store: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ui.settings_dialog import SettingsDialog

    store = SettingsStore(tmp_path / "settings.json")
    dialog = SettingsDialog(Settings(), installed_store, store)
    qtbot.addWidget(dialog)
    dialog.engine.setCurrentText("sherpa")
    dialog.vad.setValue(30)
    dialog.hotkey.start_capture()
    qtbot.keyClick(
        dialog.hotkey,
        Qt.Key.Key_K,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier,
    )
    assert dialog.hotkey.text() == "ctrl+alt+k"
    with qtbot.waitSignal(dialog.saved) as blocker:
        dialog.save()
    saved: Settings = blocker.args[0]
    assert (saved.engine, saved.vad_threshold, saved.hotkey) == ("sherpa", 0.3, "ctrl+alt+k")
    on_disk = json.loads((tmp_path / "settings.json").read_text())
    assert on_disk["engine"] == "sherpa"

    warnings: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: warnings.append(args[2]))
    again = SettingsDialog(saved, installed_store, store)
    qtbot.addWidget(again)
    again.hotkey.setText("ctrl+")
    again.save()
    assert len(warnings) == 1
    assert json.loads((tmp_path / "settings.json").read_text())["hotkey"] == "ctrl+alt+k"


def test_selftest_dialog_runs_and_shows_the_verdict(
    qtbot: Any, installed_store: ModelStore
) -> None:
    from app.ui.selftest_dialog import SelfTestDialog

    dialog = SelfTestDialog(installed_store.require("whisper-tiny.en"), "cpu")
    qtbot.addWidget(dialog)
    dialog.start()
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=120_000)
    assert dialog.report is not None
    assert dialog.report.verdict.value == "cpu-ok"
    assert "cpu-ok" in dialog.verdict.text()
    assert "cpu asked, cpu ran" in dialog.details.toPlainText()
