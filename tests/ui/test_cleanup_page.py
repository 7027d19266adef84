"""The settings window's Clean-up page, used by keyboard: turning clean-up on, pointing it at
another computer, which is refused until the user allows that host in a question naming it,
and the API key kept out of settings.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from voxtray.cleanup import cleanup_key_store
from voxtray.config import Settings, SettingsStore
from voxtray.models.catalog import load_catalog
from voxtray.models.store import ModelStore
from voxtray.settings_schema import Section
from voxtray.settings_writer import SettingsWriter
from voxtray.ui.settings.window import SettingsWindow

pytest.importorskip("pytestqt")


@pytest.fixture
def window(qtbot: Any, tmp_path: Path) -> SettingsWindow:
    shown = SettingsWindow(
        Settings(),
        ModelStore(tmp_path / "models", load_catalog()),
        SettingsWriter(SettingsStore(tmp_path / "settings.json")),
        cleanup_keys=cleanup_key_store(tmp_path / "cleanup-key"),
    )
    qtbot.addWidget(shown)
    shown.show()
    shown.show_section(Section.CLEANUP)
    return shown


def _answer(button: QMessageBox.StandardButton, asked: list[str]) -> None:
    """Answer the next question box by keyboard, noting what it asked."""

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, answer)
            return
        asked.append(box.text())
        chosen = box.button(button)
        assert chosen is not None
        chosen.setFocus()
        chosen.animateClick()

    QTimer.singleShot(20, answer)


def _back(qtbot: Any, window: SettingsWindow) -> None:
    """A closed question gives the window back on a desktop; the test platform does not."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)


def test_off_by_default_and_local_says_the_text_stays_here(window: SettingsWindow) -> None:
    page = window.cleanup
    assert not page.enabled.isChecked()
    assert page.where.text() == "Your text stays on this computer."
    assert not page.allow.isVisible()


def test_another_host_is_allowed_only_by_name_and_saved(
    qtbot: Any, window: SettingsWindow, tmp_path: Path
) -> None:
    page = window.cleanup
    qtbot.keyClick(window, Qt.Key.Key_C, Qt.KeyboardModifier.AltModifier)  # focuses and ticks
    assert page.enabled.hasFocus()
    qtbot.waitUntil(page.enabled.isChecked)
    qtbot.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.AltModifier)
    assert page.endpoint.hasFocus()
    page.endpoint.selectAll()
    qtbot.keyClicks(page.endpoint, "http://gpu-box:11434/v1")
    assert page.where.text() == "Your text would go to gpu-box: not allowed yet."
    assert page.allow.isVisible()

    asked: list[str] = []
    _answer(QMessageBox.StandardButton.No, asked)
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: len(asked) == 1)
    assert "gpu-box" in asked[0]
    assert "unencrypted" in asked[0]
    assert page.hosts.text() == ""

    _back(qtbot, window)
    _answer(QMessageBox.StandardButton.Yes, asked)
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: page.hosts.text() == "gpu-box")
    assert page.where.text() == "Your text goes to gpu-box, which you allowed."
    assert not page.allow.isVisible()

    _back(qtbot, window)
    qtbot.keyClick(window, Qt.Key.Key_Y, Qt.KeyboardModifier.AltModifier)
    assert page.key.hasFocus()
    qtbot.keyClicks(page.key, "sk-test-123")
    qtbot.keyClick(window, Qt.Key.Key_S, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil((tmp_path / "settings.json").exists)
    saved = json.loads((tmp_path / "settings.json").read_text())
    assert saved["cleanup_enabled"] is True
    assert saved["cleanup_endpoint"] == "http://gpu-box:11434/v1"
    assert saved["cleanup_consented_hosts"] == "gpu-box"
    assert "sk-test-123" not in (tmp_path / "settings.json").read_text()
    assert cleanup_key_store(tmp_path / "cleanup-key").get() == "sk-test-123"


def test_a_bad_endpoint_is_said_and_refused_on_save(
    qtbot: Any, window: SettingsWindow, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    page = window.cleanup
    page.endpoint.setText("ftp://gpu-box/v1")
    assert page.where.text().startswith("The endpoint cannot be used:")
    told: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: told.append(args[2]))
    window.save()
    assert len(told) == 1
    assert "cleanup_endpoint" in told[0] or "Endpoint" in told[0]
    assert not (tmp_path / "settings.json").exists()
