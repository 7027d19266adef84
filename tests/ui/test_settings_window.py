"""The settings window in sections, offscreen with pytest-qt: every setting reachable, help
and names on every control, keyboard use, editors for words, Test connection against a
real `voxtray serve`, and a size that fits small screens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QSlider,
    QTextEdit,
    QWidget,
)

from tests.support.audio import REPO
from tests.support.models import ensure_installed
from tests.support.store import NAME, Fake
from voxtray.config import Settings, SettingsStore
from voxtray.models.catalog import load_catalog
from voxtray.models.store import ModelStore
from voxtray.settings_schema import SCHEMA, Key, Section
from voxtray.settings_writer import SettingsWriter
from voxtray.ui.settings.window import SettingsWindow

pytest.importorskip("pytestqt")

WORDS_5001 = [f"word{i}" for i in range(5001)]  # one entry over the limit
INTERACTIVE = (QAbstractButton, QComboBox, QLineEdit, QAbstractSpinBox, QSlider, QAbstractItemView)


@pytest.fixture
def window(qtbot: Any, tmp_path: Path) -> SettingsWindow:
    store = ModelStore(tmp_path / "models", load_catalog())
    shown = SettingsWindow(
        Settings(), store, SettingsWriter(SettingsStore(tmp_path / "settings.json"))
    )
    qtbot.addWidget(shown)
    return shown


def interactive_controls(root: QWidget) -> list[QWidget]:
    found = [w for w in root.findChildren(QWidget) if isinstance(w, INTERACTIVE)]
    # a combo box's popup list and the line edit inside a combo or spin box are named
    # through their owner
    return [w for w in found if not _inside_a_box(w)]


def spoken_name(widget: QWidget) -> str:
    """What a screen reader says for the control: its accessible name, else a button's text
    (Qt falls back to it)."""
    text = widget.text() if isinstance(widget, QAbstractButton) else ""
    return (widget.accessibleName() or text.replace("&", "")).strip()


def _inside_a_box(widget: QWidget) -> bool:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QComboBox | QAbstractSpinBox | QAbstractItemView):
            return True
        if type(parent).__name__ == "QComboBoxPrivateContainer":
            return True
        parent = parent.parentWidget()
    return False


def test_every_setting_is_on_a_page(window: SettingsWindow) -> None:
    assert window.keys_shown() == frozenset(Key)
    assert [window.sidebar.item(i).text() for i in range(window.sidebar.count())] == [
        s.value for s in Section
    ]
    values = window.values()
    assert window.settings.replace(**{k.value: v for k, v in values.items()}) == Settings()


def test_every_control_has_a_name_and_help(window: SettingsWindow) -> None:
    unnamed = [type(w).__name__ for w in interactive_controls(window) if not spoken_name(w)]
    assert unnamed == [], unnamed
    shown = {label.text() for label in window.findChildren(QLabel)}
    assert [s.key for s in SCHEMA.values() if s.help not in shown] == []
    assert "NVIDIA card" in window.gpu_index.toolTip()
    assert window.level.accessibleName() == "Microphone level"
    assert window.hotkey.accessibleName() == "Hotkey"
    assert window.model.accessibleName() == "Model"


def test_slider_says_its_value_and_its_meaning(window: SettingsWindow) -> None:
    page = window.pages[1]
    window.vad.setValue(30)
    assert page.vad_slider.shown.text() == "0.30"
    texts = " ".join(
        label.text() for label in page.vad_slider.findChildren(type(page.vad_slider.shown))
    )
    assert "Low:" in texts
    assert "High:" in texts


def test_tab_leaves_every_text_box(window: SettingsWindow) -> None:
    for widget in window.findChildren(QWidget):
        if isinstance(widget, QPlainTextEdit | QTextEdit) and not widget.isReadOnly():
            assert widget.tabChangesFocus(), widget
        if isinstance(widget, QAbstractItemView):
            assert not widget.tabKeyNavigation(), widget


def test_escape_cancels_hotkey_capture(qtbot: Any, window: SettingsWindow) -> None:
    window.show()
    window.hotkey.start_capture()
    qtbot.keyClick(window.hotkey, Qt.Key.Key_Escape)
    assert window.hotkey.text() == "ctrl+alt+space"
    assert not window.hotkey.capturing
    assert window.isVisible()  # Esc ended the capture, not the window
    window.hotkey.start_capture()
    qtbot.keyClick(window.hotkey, Qt.Key.Key_F9)
    assert window.hotkey.text() == "f9"


def test_replacements_preview_and_vocabulary_editor(
    qtbot: Any, window: SettingsWindow, tmp_path: Path
) -> None:
    words = window.words
    window.replacements.add_row("vox tray", "Voxtray")
    words.try_text.setText("I use vox tray daily.")
    assert words.try_result.text() == "→ I use Voxtray daily."
    window.replacements_enabled.setChecked(False)
    assert words.try_result.text() == "→ I use vox tray daily."
    assert "Hello, how are you?" in words.punctuation_example.text()
    window.spoken_punctuation.setChecked(False)
    assert "Hello, how are you?" not in words.punctuation_example.text()

    editor = window.vocabulary
    editor.entry.setText("Kubernetes, Voxtray")
    editor.add_button.click()
    assert editor.entries() == ["Kubernetes", "Voxtray"]
    editor.list.item(0).setSelected(True)
    editor.remove_button.click()
    assert editor.entries() == ["Voxtray"]
    source = tmp_path / "words.txt"
    source.write_text("sherpa-onnx\nPySide\n", encoding="utf-8")
    editor.pick = lambda parent, saving: source
    editor.import_button.click()
    assert editor.entries() == ["Voxtray", "sherpa-onnx", "PySide"]
    target = tmp_path / "out.txt"
    editor.pick = lambda parent, saving: target
    editor.export_button.click()
    assert target.read_text(encoding="utf-8") == "Voxtray\nsherpa-onnx\nPySide\n"
    assert editor.count.text() == "Exported 3 entries to out.txt."


def test_saving_a_model_that_is_not_installed_offers_install_and_saves_nothing(
    qtbot: Any, tmp_path: Path, model_store: ModelStore
) -> None:
    ensure_installed(model_store, "whisper-tiny.en")
    settings_file = tmp_path / "settings.json"
    window = SettingsWindow(Settings(), model_store, SettingsWriter(SettingsStore(settings_file)))
    qtbot.addWidget(window)
    missing = next(n for n, r in window.model_picker.rows.items() if not r.installed)
    window.model.setCurrentIndex(window.model.findData(missing))
    asked: list[str] = []
    window.model_picker.ask = lambda parent, title, text, yes: asked.append(text) or False
    saved: list[Settings] = []
    window.saved.connect(saved.append)
    window.save()
    assert asked
    assert "not installed" in asked[0]
    assert "keeps working" in asked[0]
    assert saved == []
    assert not settings_file.exists()
    assert window.stack.currentWidget() is window.pages[2]  # the Model page, shown


@pytest.mark.parametrize(
    ("width", "height", "scale"), [(1280, 720, 1), (1366, 768, 1), (2560, 1440, 2)]
)
def test_window_fits_small_screens(width: int, height: int, scale: int, tmp_path: Path) -> None:
    """In a child process, so the screen size and scale factor are its own."""
    script = tmp_path / "fit.py"
    script.write_text(FIT_SCRIPT, encoding="utf-8")
    screens = tmp_path / "screens.json"
    screen = {"name": "s", "x": 0, "y": 0, "width": width, "height": height}
    screens.write_text(json.dumps({"screens": [{**screen, "logicalDpi": 96, "dpr": 1}]}))
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": f"offscreen:configfile={screens}",
        "QT_SCALE_FACTOR": str(scale),
        "PYTHONPATH": os.pathsep.join([str(REPO / "app"), str(REPO)]),
    }
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    screen_w, screen_h = result["screen"]
    assert (screen_w * scale, screen_h * scale) == (width, height)
    for page, (w, h, min_w, min_h, buttons_visible) in result["pages"].items():
        assert w <= screen_w, (page, result)
        assert h <= screen_h, (page, result)
        assert min_w <= screen_w, (page, result)
        assert min_h <= screen_h, (page, result)
        assert buttons_visible, page


FIT_SCRIPT = """
import json, sys
from pathlib import Path
from PySide6.QtWidgets import QApplication
app = QApplication([])
from voxtray.config import Settings, SettingsStore
from voxtray.models.catalog import load_catalog
from voxtray.models.store import ModelStore
from voxtray.settings_writer import SettingsWriter
from voxtray.ui.settings.window import SettingsWindow
tmp = Path(sys.argv[1])
window = SettingsWindow(
    Settings(engine="remote"),
    ModelStore(tmp / "m", load_catalog()),
    SettingsWriter(SettingsStore(tmp / "s.json")),
)
window.show()
area = app.primaryScreen().availableGeometry()
pages = {}
for row, page in enumerate(window.pages):
    window.sidebar.setCurrentRow(row)
    app.processEvents()
    save = window.buttons.buttons()[0]
    corner = save.mapTo(window, save.rect().bottomRight())
    inside = window.rect().contains(corner)
    pages[page.section.value] = (
        window.frameGeometry().width(), window.frameGeometry().height(),
        window.minimumSizeHint().width(), window.minimumSizeHint().height(),
        save.isVisible() and inside,
    )
print(json.dumps({"screen": [area.width(), area.height()], "pages": pages}))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore) -> Iterator[Any]:
    pytest.importorskip("starlette", reason="the serve extra is not installed")
    from tests.support.serving import serving_tiny_en

    with serving_tiny_en(
        tmp_path_factory.mktemp("probe"), model_store, "--provider", "cpu"
    ) as server:
        yield server


def test_test_connection_shows_where_the_server_runs(
    qtbot: Any, window: SettingsWindow, served: Any
) -> None:
    window.show()
    window.show_section(Section.REMOTE)
    page = window.remote_page
    page.use_server.setChecked(True)
    assert window.engine.currentData() == "remote"  # one choice, on two pages
    page.remote_url.setText(served.url)
    page.test_button.click()
    qtbot.waitUntil(lambda: page.test_button.isEnabled(), timeout=20_000)
    text = page.test_result.text()
    assert text.startswith("Connected: whisper-tiny.en on cpu"), text
    page.remote_url.setText("http://127.0.0.1:9")  # discard port: nothing listens
    page.test_button.click()
    qtbot.waitUntil(lambda: page.test_button.isEnabled(), timeout=20_000)
    assert "Nothing is listening" in page.test_result.text()
    assert "Errno" not in page.test_result.text()


def test_bad_replacement_row_is_refused_in_words(
    qtbot: Any, window: SettingsWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: told.append(args[2]))
    window.replacements.add_row("only said", "")
    window.save()
    assert told
    assert "both filled in" in told[0]
    assert "line 1 is not" in told[0]
    assert QApplication.instance() is not None


@pytest.mark.parametrize(
    ("key", "fill"),
    [
        (Key.REPLACEMENTS, lambda w: w.replacements.add_row("only said", "")),
        (Key.VOCABULARY, lambda w: w.vocabulary.setPlainText("\n".join(WORDS_5001))),
        (Key.HOTKEY, lambda w: w.hotkey.setText("ctrl+banana")),
    ],
)
def test_the_window_refuses_what_the_file_refuses_in_the_same_words(
    qtbot: Any,
    window: SettingsWindow,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    key: Key,
    fill: Any,
) -> None:
    told: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: told.append(args[2]))
    fill(window)
    window.save()
    assert len(told) == 1
    assert not (tmp_path / "settings.json").exists()
    hand_edited = tmp_path / "hand-edited.json"
    hand_edited.write_text(json.dumps({key.value: window.values()[key]}))
    _settings, warnings = SettingsStore(hand_edited).load()
    assert warnings[0].startswith(f"{told[0]}; using its default"), (told, warnings)


# --- the model switch, in the running app ----------------------------------------------


def test_a_failed_switch_keeps_the_running_model_and_the_saved_choice(
    qtbot: Any,
    voxtray: Any,
    tmp_path: Path,
) -> None:
    from voxtray.control.server import send

    settings_file = tmp_path / "settings.json"
    before = voxtray.settings
    asked = before.replace(model="no-such-model", sound_cues=False)
    with qtbot.waitSignal(voxtray.reports.load_failed, timeout=60_000):
        voxtray.apply_settings(asked)
    qtbot.waitUntil(lambda: send("status")["state"] == "ready")
    assert send("status")["model"] == before.model
    assert voxtray.settings.model == before.model
    assert not voxtray.settings.sound_cues  # the other change stands
    assert not settings_file.exists() or json.loads(settings_file.read_text())["model"] == (
        before.model
    )
    note = voxtray.guard.notes[-1]
    assert f"Still using {before.model}" in note
    assert "Errno" not in note
    assert send("start")["state"] == "listening"  # dictation still works
    send("stop")


def test_a_switch_is_saved_once_the_new_model_has_loaded(
    qtbot: Any,
    voxtray: Any,
    tmp_path: Path,
    installed_store: ModelStore,
) -> None:
    from voxtray.control.server import send

    ensure_installed(installed_store, "whisper-base")
    voxtray.open_settings()
    window = voxtray.windows.find(SettingsWindow)
    first = window
    voxtray.open_settings()  # a second Settings… raises the open window, edits kept
    assert voxtray.windows.find(SettingsWindow) is first
    window.model.setCurrentIndex(window.model.findData("whisper-base"))
    settings_file = tmp_path / "settings.json"
    with qtbot.waitSignal(voxtray.worker.loaded, timeout=120_000):
        window.save()
        assert json.loads(settings_file.read_text())["model"] == "whisper-tiny.en"
    qtbot.waitUntil(lambda: json.loads(settings_file.read_text())["model"] == "whisper-base")
    assert send("status")["model"] == "whisper-base"


# --- installing from the model row ------------------------------------------------------


def test_a_failed_install_says_so_in_plain_words_and_leaves_no_stale_status(
    qtbot: Any,
    fake: Fake,
    tmp_path: Path,
) -> None:
    from voxtray.models.catalog import load_catalog
    from voxtray.ui.model_picker import ModelPicker

    catalog = json.loads(fake.catalog_path.read_text())
    catalog["models"][0]["source"]["url"] = "https://voxtray-test.invalid/model.tar.bz2"
    unreachable = tmp_path / "catalog.json"
    unreachable.write_text(json.dumps(catalog))
    picker = ModelPicker(ModelStore(tmp_path / "store", load_catalog(unreachable)), NAME)
    qtbot.addWidget(picker)
    told: list[str] = []
    picker.ask = lambda parent, title, text, yes: True
    picker.tell = lambda parent, title, text: told.append(text)
    with qtbot.waitSignal(picker.install_done, timeout=60_000):
        picker.install_button.click()
    assert len(told) == 1
    assert "Errno" not in told[0]
    assert "could not be found" in told[0]
    assert "press Install again" in told[0]
    assert "was not installed" in picker.status.text()
    picker.refresh(NAME)
    picker.combo.setCurrentIndex(-1)
    picker.combo.setCurrentIndex(0)
    assert "was not installed" not in picker.status.text()  # not left from before


def test_install_progress_says_speed_and_time_left() -> None:
    from voxtray.ui.model_picker import rate_text

    assert rate_text(10_000_000, 50_000_000, 2.0) == "5.0 MB/s · about 8 s left"
    assert rate_text(10_000_000, 1_000_000_000, 1.0) == "10.0 MB/s · about 2 min left"
    assert rate_text(0, 100, 1.0) == ""


def test_enter_in_the_vocabulary_entry_adds_it_and_does_not_save(
    qtbot: Any, window: SettingsWindow
) -> None:
    saved: list[Settings] = []
    window.saved.connect(saved.append)
    window.show()
    window.show_section(Section.WORDS)
    editor = window.vocabulary
    editor.entry.setFocus()
    qtbot.keyClicks(editor.entry, "Kubernetes")
    qtbot.keyClick(editor.entry, Qt.Key.Key_Return)
    assert editor.entries() == ["Kubernetes"]
    assert saved == []
    assert window.isVisible()


def test_escape_closes_the_window_without_saving(qtbot: Any, window: SettingsWindow) -> None:
    saved: list[Settings] = []
    window.saved.connect(saved.append)
    window.show()
    window.sound_cues.setChecked(False)
    qtbot.keyClick(window.sidebar, Qt.Key.Key_Escape)
    assert not window.isVisible()
    assert saved == []


# --- what the app does with the windows' choices ----------------------------------------


def test_word_settings_apply_without_a_reload(
    qtbot: Any,
    voxtray: Any,
) -> None:
    from voxtray.text.postprocess import process

    loads: list[object] = []
    voxtray.worker.load_requested.connect(loads.append)
    changed = voxtray.settings.replace(
        spoken_punctuation=False, replacements="vox tray -> Voxtray", sound_cues=False
    )
    voxtray.apply_settings(changed)
    dictation = voxtray.worker.dictation
    qtbot.waitUntil(lambda: not dictation._loaded.text_options.spoken_punctuation)
    assert process("I use vox tray, comma.", dictation._loaded.text_options).text == (
        "I use Voxtray, comma."
    )
    assert not dictation._cues.enabled
    assert loads == []  # the model was not reloaded for them


def test_show_hud_in_the_tray_is_saved(
    qtbot: Any,
    voxtray: Any,
    tmp_path: Path,
) -> None:
    voxtray.menu.hud_action.setChecked(False)
    saved = json.loads((tmp_path / "settings.json").read_text())
    assert saved["hud_enabled"] is False
    assert not voxtray.settings.hud_enabled
    voxtray.open_settings()
    assert not voxtray.windows.find(SettingsWindow).hud.isChecked()  # the next Save keeps it off


def test_copying_a_recent_dictation_says_copied_and_windows_are_one_of_a_kind(
    qtbot: Any,
    voxtray: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from voxtray.ui.tray import Notice

    told: list[tuple[str, str, Notice]] = []
    monkeypatch.setattr(voxtray.tray, "notify", lambda *args: told.append(args))
    entry = voxtray.history.add(
        "the birch canoe", model="m", engine="e", provider="cpu", audio_s=1.0, timings={}
    )
    voxtray._copy_recent(entry)
    assert QApplication.clipboard().text() == "the birch canoe"
    assert told == [("Copied", "the birch canoe", Notice.INFO)]
    from voxtray.ui.selftest_dialog import SelfTestDialog

    voxtray.open_selftest()
    first = voxtray.windows.find(SelfTestDialog)
    assert first is not None
    voxtray.open_selftest()
    assert voxtray.windows.find(SelfTestDialog) is first


def test_no_two_controls_on_a_page_share_a_mnemonic(window: SettingsWindow) -> None:
    import re

    mnemonic = re.compile(r"&([^&\s])")
    shared = [b.text() for b in window.buttons.buttons()]
    clashes = {}
    for page in window.pages:
        texts = shared + [
            w.text() for w in page.findChildren(QWidget) if isinstance(w, QLabel | QAbstractButton)
        ]
        letters = [m.group(1).lower() for t in texts if (m := mnemonic.search(t))]
        doubled = sorted({x for x in letters if letters.count(x) > 1})
        if doubled:
            clashes[page.section.value] = doubled
    assert clashes == {}
