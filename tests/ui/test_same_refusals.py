"""A hotkey no keyboard has, a replacement line without its written side and a vocabulary
over the cap are refused by a hand-edited settings.json, the command line, the settings
window and the set-up window in the same words: the setting's own (`Spec.problem`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QMessageBox

from tests.support.process import run_voxtray
from voxtray.choices import Provider
from voxtray.config import Settings, SettingsStore, refusal
from voxtray.desktop.session import DesktopSession
from voxtray.errors import ExitCode
from voxtray.models.catalog import load_catalog
from voxtray.models.measurements import MeasurementCache
from voxtray.models.store import ModelStore
from voxtray.settings_schema import Key
from voxtray.settings_writer import SettingsWriter
from voxtray.text.vocabulary import MAX_ENTRIES
from voxtray.ui.first_run import FirstRunWindow
from voxtray.ui.settings.window import SettingsWindow

pytest.importorskip("pytestqt")

BAD: dict[Key, str] = {
    Key.HOTKEY: "ctrl+banana",
    Key.REPLACEMENTS: "only said ->",
    Key.VOCABULARY: "\n".join(f"word{i}" for i in range(MAX_ENTRIES + 1)),
}
X11 = DesktopSession.from_env({"DISPLAY": ":0", "XDG_CURRENT_DESKTOP": "XFCE"})


def words(key: Key) -> str:
    """What every front end says: "setting hotkey must be ... (...)"."""
    said = refusal(key, BAD[key])
    assert said is not None
    assert said == f"setting {key.value} {key.spec.problem(BAD[key])}"
    return said


def test_the_words_name_what_is_wrong() -> None:
    assert words(Key.HOTKEY) == (
        "setting hotkey must be keys joined by +, such as ctrl+alt+space "
        "(unknown key 'banana' in hotkey 'ctrl+banana')"
    )
    assert words(Key.REPLACEMENTS) == (
        "setting replacements must be lines of 'spoken -> written', both filled in (line 1 is not)"
    )
    assert words(Key.VOCABULARY) == (
        "setting vocabulary must be at most 5000 words and names (it holds 5001)"
    )


@pytest.mark.parametrize("key", list(BAD))
def test_a_hand_edited_file(key: Key, tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({key.value: BAD[key]}), encoding="utf-8")
    settings, warnings = SettingsStore(path).load()
    assert warnings == [
        f"{words(key)}; using its default; the file as it was is kept as {path}.bak"
    ]
    assert settings.get(key) == key.spec.initial()


@pytest.fixture(scope="module")
def cli_stderr(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What `voxtray models recommend` says of a settings.json holding all three."""
    home = tmp_path_factory.mktemp("home")
    (home / "settings.json").write_text(
        json.dumps({key.value: value for key, value in BAD.items()}), encoding="utf-8"
    )
    result = run_voxtray("models", "recommend", home=home, timeout=120)
    assert result.returncode == ExitCode.OK, result.stderr
    return result.stderr


@pytest.mark.parametrize("key", list(BAD))
def test_the_command_line_reading_the_file(key: Key, cli_stderr: str) -> None:
    assert f"voxtray: {words(key)}; using its default;" in cli_stderr


def test_the_command_lines_vocabulary_flag(tmp_path: Path) -> None:
    listing = tmp_path / "names.txt"
    listing.write_text(BAD[Key.VOCABULARY], encoding="utf-8")
    result = run_voxtray(
        "transcribe", str(tmp_path / "none.wav"), "--vocabulary", str(listing), home=tmp_path
    )
    assert result.returncode == ExitCode.BAD_INPUT
    problem = Key.VOCABULARY.spec.problem(BAD[Key.VOCABULARY])
    assert result.stderr.strip() == f"voxtray: error: the vocabulary {problem}"


def _fill(window: SettingsWindow, key: Key) -> None:
    if key is Key.HOTKEY:
        window.hotkey.setText(BAD[key])
    elif key is Key.REPLACEMENTS:
        window.replacements.add_row("only said", "")
    else:
        window.vocabulary.setPlainText(BAD[key])


@pytest.mark.parametrize("key", list(BAD))
def test_the_settings_window(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: Key
) -> None:
    told: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: told.append(args[2]))
    store = ModelStore(tmp_path / "models", load_catalog())
    path = tmp_path / "settings.json"
    window = SettingsWindow(Settings(), store, SettingsWriter(SettingsStore(path)))
    qtbot.addWidget(window)
    _fill(window, key)
    assert window.values()[key] == BAD[key]
    window.save()
    assert told == [words(key)]
    assert not path.exists()


def test_the_set_up_window(qtbot: Any, tmp_path: Path, model_store: ModelStore) -> None:
    shown = FirstRunWindow(
        Settings(provider=Provider.CPU),
        model_store,
        cache=MeasurementCache(tmp_path / "m.json"),
        gpu_present=False,
        session=X11,
    )
    qtbot.addWidget(shown)
    shown.hotkey.setText(BAD[Key.HOTKEY])
    assert shown.conflict.text() == words(Key.HOTKEY)
