"""The Qt layer, offscreen with pytest-qt: the app wired to the real model through the
inference worker thread, the fallback window, the HUD and the settings dialog.

Every app test runs with a guard on the widget-touching methods of the tray and the HUD:
a call from any thread but the GUI thread is recorded (and not run, since painting off the
GUI thread is what crashes) and fails the test.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.outputs import speak
from tests.support.qt_app import GuiThreadGuard, dispose_app, loaded_app
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from voxtray.choices import DictationState
from voxtray.config import Settings, SettingsStore
from voxtray.control.server import send
from voxtray.dictation.utterance import Utterance
from voxtray.models.store import ModelStore
from voxtray.settings_writer import SettingsWriter

pytest.importorskip("pytestqt")
CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"


def test_a_replaced_history_database_is_shown_to_the_user(
    qtbot: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    installed_store: ModelStore,
    gui_guard: GuiThreadGuard,
) -> None:
    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path))
    with sqlite3.connect(tmp_path / "history.sqlite3") as db:
        db.execute("CREATE TABLE utterances (id INTEGER PRIMARY KEY, words BLOB)")
    app = loaded_app(qtbot, installed_store, tmp_path)
    try:
        assert any("history" in note.lower() for note in gui_guard.notes), gui_guard.notes
    finally:
        dispose_app(app)


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
    assert_heard(BIRCH, utterance.text, SENTENCE_WER)
    assert voxtray.output.typed == [utterance.text + " "]
    qtbot.waitUntil(lambda: send("status")["state"] == "ready")
    status = send("status")
    assert status["last"]["text"] == utterance.text
    assert status["provider"] == "cpu"
    qtbot.waitUntil(voxtray.menu.recent_menu.isEnabled)
    assert voxtray.menu.recent_menu.actions()[0].text().startswith(utterance.text[:20])
    # the READY state can reach the GUI thread before the utterance report does
    qtbot.waitUntil(lambda: "stt" in voxtray.hud.latency_label.text())


def test_worker_reports_reach_the_widgets_on_the_gui_thread_only(qtbot: Any, voxtray: Any) -> None:
    """Reports come from the worker's QThread, the control thread and the microphone
    thread (the audio server dying mid-dictation); each must be run on the GUI thread."""
    guard: GuiThreadGuard = voxtray.guard
    notes = guard.notes
    assert guard.calls["Hud.set_engine"] == 1  # the model loaded on the worker thread
    assert send("start")["state"] == "listening"  # state change on the control thread
    stream = voxtray.fake.streams[-1]
    voxtray.fake.fail, voxtray.fake.fail_at = "finish", stream.position + 16000
    with qtbot.waitSignal(voxtray.worker.utterance, timeout=60_000):
        speak(voxtray.fake, read_wav(CLIP))
    qtbot.waitUntil(lambda: any("was lost" in note for note in notes))
    qtbot.waitUntil(lambda: guard.calls["Hud.show_utterance"] == 1)
    send("show")
    qtbot.waitUntil(lambda: guard.calls["Tray.bring_forward"] == 1)
    with qtbot.waitSignal(voxtray.worker.load_failed, timeout=60_000):
        voxtray.worker.load_requested.emit(voxtray.settings.replace(model="no-such-model"))
    qtbot.waitUntil(lambda: any("no-such-model" in note for note in notes))
    for label in ("Tray.set_state", "Hud.set_state", "Tray.notify", "TrayMenu.set_recent"):
        assert guard.calls[label] > 0, label
    assert guard.violations == []


def test_settings_level_meter_follows_the_microphone_after_a_reload(
    qtbot: Any, voxtray: Any
) -> None:
    from voxtray.ui.settings.window import SettingsWindow

    voxtray.open_settings()
    dialog = voxtray.windows.find(SettingsWindow)
    qtbot.addWidget(dialog)
    loaded = voxtray.worker.dictation._loaded  # which microphone is open, for the check only
    first = None if loaded is None else loaded.microphone
    with qtbot.waitSignal(voxtray.worker.loaded, timeout=120_000):
        voxtray.worker.load_requested.emit(voxtray.settings)
    loaded = voxtray.worker.dictation._loaded
    second = None if loaded is None else loaded.microphone
    assert second is not None
    assert second is not first
    seconds = np.arange(16000 * 10) / 16000
    speak(voxtray.fake, (0.5 * np.sin(2 * np.pi * 440 * seconds)).astype(np.float32))
    qtbot.waitUntil(lambda: second.level > -20)  # a 0.5 sine: about -9 dBFS
    qtbot.waitUntil(lambda: -10 <= dialog.level.value() <= -8, timeout=5_000)


def test_second_instance_brings_the_first_forward(voxtray: Any, tmp_path: Path) -> None:
    from voxtray.ui.run import run_app

    assert run_app() == 0  # found the running instance through the socket and left


def test_hud_never_takes_focus(qtbot: Any) -> None:
    from voxtray.ui.hud import Hud

    hud = Hud()
    qtbot.addWidget(hud)
    flags = hud.windowFlags()
    assert flags & Qt.WindowType.WindowDoesNotAcceptFocus
    assert flags & Qt.WindowType.WindowStaysOnTopHint
    assert flags & Qt.WindowType.FramelessWindowHint
    assert hud.testAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
    assert hud.focusPolicy() == Qt.FocusPolicy.NoFocus
    assert hud.gpu_label.text() == "GPU: no GPU"
    hud.set_state(DictationState.LISTENING)
    assert "listening" in hud.state_label.text()


def test_settings_dialog_saves_and_validates(
    qtbot: Any, tmp_path: Path, installed_store: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voxtray.ui.settings.window import SettingsWindow

    store = SettingsStore(tmp_path / "settings.json")
    dialog = SettingsWindow(Settings(), installed_store, SettingsWriter(store))
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
    again = SettingsWindow(saved, installed_store, SettingsWriter(store))
    qtbot.addWidget(again)
    again.hotkey.setText("ctrl+")
    again.save()
    assert len(warnings) == 1
    assert json.loads((tmp_path / "settings.json").read_text())["hotkey"] == "ctrl+alt+k"


def test_selftest_dialog_runs_and_shows_the_verdict(
    qtbot: Any, installed_store: ModelStore, gui_guard: GuiThreadGuard
) -> None:
    from voxtray.ui.selftest_dialog import SelfTestDialog

    dialog = SelfTestDialog(installed_store.require("whisper-tiny.en"), "cpu")
    qtbot.addWidget(dialog)
    dialog.start()
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=120_000)
    assert gui_guard.calls["SelfTestDialog.say"] >= 2  # progress, then the verdict
    assert gui_guard.violations == []
    assert dialog.report is not None
    assert dialog.report.verdict.value == "cpu-ok"
    assert "cpu-ok" in dialog.verdict.text()
    assert "cpu asked, cpu ran" in dialog.details.toPlainText()


def test_settings_dialog_edits_words(
    qtbot: Any, tmp_path: Path, installed_store: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voxtray.ui.settings.window import SettingsWindow

    store = SettingsStore(tmp_path / "settings.json")
    dialog = SettingsWindow(Settings(), installed_store, SettingsWriter(store))
    qtbot.addWidget(dialog)
    assert dialog.spoken_punctuation.isChecked()
    assert dialog.sound_cues.isChecked()
    dialog.spoken_commands.setChecked(False)
    dialog.sound_cues.setChecked(False)
    dialog.type_as_you_go.setChecked(True)
    dialog.audio_mb.setValue(0)
    dialog.replacements.setPlainText("vox tray -> Voxtray\n\nk eight s -> k8s\n")
    dialog.vocabulary.setPlainText("Voxtray\nsherpa-onnx")
    with qtbot.waitSignal(dialog.saved) as blocker:
        dialog.save()
    saved: Settings = blocker.args[0]
    assert not saved.spoken_commands
    assert not saved.sound_cues
    assert saved.spoken_punctuation
    assert saved.type_as_you_go
    assert (saved.history_audio_mb, saved.history_audio_days) == (0, 30)
    on_disk = json.loads((tmp_path / "settings.json").read_text())
    assert on_disk["replacements"] == "vox tray -> Voxtray\n\nk eight s -> k8s"
    assert on_disk["vocabulary"] == "Voxtray\nsherpa-onnx"
    assert SettingsStore(tmp_path / "settings.json").load()[0].sound_cues is False

    warnings: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: warnings.append(args[2]))
    again = SettingsWindow(saved, installed_store, SettingsWriter(store))
    qtbot.addWidget(again)
    assert again.replacements.toPlainText() == on_disk["replacements"]
    again.replacements.setPlainText("fine -> ok\nno arrow here")
    again.save()
    again.replacements.setPlainText("")
    again.vocabulary.setPlainText(",".join(f"word{i}" for i in range(5001)))
    again.save()
    assert len(warnings) == 2
    assert "line 2" in warnings[0]
    assert "5000" in warnings[1]
    assert json.loads((tmp_path / "settings.json").read_text()) == on_disk


def test_recent_dictation_reruns_from_its_kept_audio(qtbot: Any, voxtray: Any) -> None:
    assert send("start")["state"] == "listening"
    voxtray.fake.streams[-1].wait_for(speak(voxtray.fake, read_wav(CLIP)))
    with qtbot.waitSignal(voxtray.worker.utterance, timeout=60_000) as blocker:
        send("stop")
    first: Utterance = blocker.args[0]
    qtbot.waitUntil(lambda: voxtray.menu.rerun_menu is not None)
    qtbot.waitUntil(lambda: send("status")["state"] == "ready")
    action = voxtray.menu.rerun_menu.actions()[0]
    assert action.text().startswith(first.text[:20])
    with qtbot.waitSignal(voxtray.reports.rerun_done, timeout=60_000) as done:
        action.trigger()
    again: Utterance = done.args[0]
    assert_heard(BIRCH, again.text, SENTENCE_WER)
    entry = voxtray.history.get(again.history_id)
    assert entry is not None
    assert entry.rerun_of == first.history_id
    qtbot.waitUntil(lambda: QApplication.clipboard().text() == again.text)
    assert voxtray.output.typed == [first.text + " "]


def test_hud_shows_live_text_and_clears_it_after_listening(qtbot: Any) -> None:
    from voxtray.ui.hud import Hud

    hud = Hud()
    qtbot.addWidget(hud)
    hud.set_state(DictationState.LISTENING)
    hud.show_partial("the birch canoe", "slid <on>")
    assert not hud.partial_label.isHidden()
    assert "the birch canoe" in hud.partial_label.text()
    assert "&lt;on&gt;" in hud.partial_label.text()
    assert hud.focusPolicy() == Qt.FocusPolicy.NoFocus
    hud.set_state(DictationState.TRANSCRIBING)
    assert hud.partial_label.isHidden()


def test_recent_list_updates_keep_one_rerun_submenu(qtbot: Any) -> None:
    from PySide6.QtWidgets import QMenu

    from voxtray.ui.tray import TrayMenu

    menu = TrayMenu()
    entries = [(i, f"dictation {i}") for i in range(5)]
    for _ in range(30):  # one update per dictation
        menu.set_recent(entries, frozenset({1, 3}))
    qtbot.waitUntil(lambda: len(menu.recent_menu.findChildren(QMenu)) == 1)
    assert menu.rerun_menu is not None
    assert [a.text() for a in menu.rerun_menu.actions()] == ["dictation 1", "dictation 3"]
    menu.set_recent(entries[:2])  # none rerunnable: no submenu left
    qtbot.waitUntil(lambda: menu.recent_menu.findChildren(QMenu) == [])
    assert menu.rerun_menu is None


def test_state_changes_reuse_one_icon_per_state(qtbot: Any) -> None:
    from voxtray.ui.tray import Tray, TrayMenu

    tray = Tray(TrayMenu(), force_window=True)  # offscreen: no system tray
    assert tray.window is not None
    qtbot.addWidget(tray.window)
    seen = set()
    for _ in range(3):  # three dictations
        for state in (DictationState.LISTENING, DictationState.TRANSCRIBING, DictationState.READY):
            tray.set_state(state)
            seen.add(tray.window.windowIcon().cacheKey())
    assert len(seen) == 3  # a new QIcon per change would fill Qt's pixmap cache


def test_a_correction_the_vocabulary_cannot_take_is_refused_in_one_line(
    qtbot: Any, voxtray: Any, tmp_path: Path
) -> None:
    from voxtray.ui.history_window import Learn

    full = "\n".join(f"Term{i}" for i in range(5000))
    voxtray.settings = voxtray.settings.replace(vocabulary=full)
    before = (tmp_path / "settings.json").read_bytes()
    voxtray.histories.open()
    qtbot.waitUntil(lambda: voxtray.histories.window is not None)
    voxtray.histories.window.learn_requested.emit(Learn.VOCABULARY, "Jon", "Jean")
    assert voxtray.guard.notes[-1] == (
        "setting vocabulary must be at most 5000 words and names (it holds 5001)"
    )
    assert voxtray.settings.vocabulary == full
    assert (tmp_path / "settings.json").read_bytes() == before
