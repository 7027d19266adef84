"""The settings dialog's model row, offscreen with pytest-qt, against a local HTTP server
serving a generated sherpa-onnx archive: consent, cancel and resume, free space, remove."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.store import ARCHIVE, NAME, Fake
from voxtray.models import limits
from voxtray.models.download import CHUNK_SIZE
from voxtray.ui.model_picker import ModelPicker


class Answers:
    """Stands in for the question and warning boxes; records what they said."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str]] = []
        self.told: list[str] = []

    def ask(self, parent: Any, title: str, text: str, yes: str) -> bool:
        self.asked.append((title, yes))
        return self.answer

    def tell(self, parent: Any, title: str, text: str) -> None:
        self.told.append(text)


def make_picker(
    qtbot: Any,
    fake: Fake,
    answer: bool,
    active: str = "",
) -> tuple[ModelPicker, Answers]:
    picker = ModelPicker(fake.store(), NAME, active=active)
    qtbot.addWidget(picker)
    answers = Answers(answer)
    picker.ask, picker.tell = answers.ask, answers.tell
    return picker, answers


def install(qtbot: Any, picker: ModelPicker) -> str:
    with qtbot.waitSignal(picker.install_done, timeout=60_000) as done:
        picker.install_button.click()
    return str(done.args[0])


def test_declining_consent_fetches_nothing(qtbot: Any, fake: Fake) -> None:
    picker, answers = make_picker(qtbot, fake, answer=False)
    assert picker.install_button.isEnabled()
    picker.install_button.click()
    assert answers.asked == [("No pinned hash", "Install anyway")]
    assert fake.archive_requests() == []
    assert "not installed" in picker.status.text()
    assert not picker.busy


def test_install_anyway_installs_and_marks_it(qtbot: Any, fake: Fake) -> None:
    picker, answers = make_picker(qtbot, fake, answer=True)
    assert not picker.combo.currentText().startswith("✓")
    assert install(qtbot, picker) == ""
    assert answers.asked == [("No pinned hash", "Install anyway")]
    assert picker.combo.currentText().startswith("✓ ")
    assert not picker.install_button.isEnabled()
    assert picker.remove_button.isEnabled()
    assert (fake.root / "trusted.json").is_file()
    assert "is installed" in picker.status.text()


def test_cancel_then_resume(qtbot: Any, fake: Fake) -> None:
    fake.server.throttle_s = 0.02  # about 1.5 s for the archive
    picker, answers = make_picker(qtbot, fake, answer=True)
    with qtbot.waitSignal(picker.install_done, timeout=60_000) as done:
        picker.install_button.click()
        assert picker.cancel_button.isVisible() or picker.busy
        qtbot.waitUntil(lambda: picker.progress.value() >= CHUNK_SIZE, timeout=30_000)
        picker.cancel_button.click()
    assert "cancelled" in done.args[0]
    assert "resumes" in picker.status.text()
    part = fake.root / ".downloads" / f"{ARCHIVE}.part"
    kept = part.stat().st_size
    assert kept >= CHUNK_SIZE
    assert picker.install_button.isEnabled()

    fake.server.throttle_s = 0.0
    assert install(qtbot, picker) == ""
    assert len(answers.asked) == 1  # consent is not asked twice in one session
    assert fake.archive_requests() == [None, f"bytes={kept}-"]
    assert picker.combo.currentText().startswith("✓ ")


def test_free_space_refusal_is_shown(
    qtbot: Any,
    fake: Fake,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "free_bytes", lambda path: 5_000_000)
    picker, answers = make_picker(qtbot, fake, answer=True)
    error = install(qtbot, picker)
    assert error.startswith("not enough free space")
    assert answers.told == [error]
    assert fake.archive_requests() == []
    assert picker.install_button.isEnabled()


def test_remove(qtbot: Any, fake: Fake, tmp_path: Path) -> None:
    picker, answers = make_picker(qtbot, fake, answer=True)
    install(qtbot, picker)
    picker.active = NAME
    picker.remove_button.click()
    assert "in use" in answers.told[-1]
    assert picker.store.get(NAME) is not None

    picker.active = ""
    with qtbot.waitSignal(picker.removed):
        picker.remove_button.click()
    assert answers.asked[-1] == ("Remove model", "Remove")
    assert picker.store.get(NAME) is None
    assert not picker.combo.currentText().startswith("✓")
    assert picker.install_button.isEnabled()


def test_settings_dialog_installs_with_consent_and_saves_the_model(
    qtbot: Any,
    fake: Fake,
    tmp_path: Path,
) -> None:
    """The whole dialog: choose the unpinned model, Install anyway, then Save it."""
    from voxtray.config import Settings, SettingsStore
    from voxtray.settings_writer import SettingsWriter
    from voxtray.ui.settings.window import SettingsWindow

    settings_store = SettingsStore(tmp_path / "settings.json")
    dialog = SettingsWindow(Settings(), fake.store(), SettingsWriter(settings_store))
    qtbot.addWidget(dialog)
    picker = dialog.model_picker
    answers = Answers(True)
    picker.ask, picker.tell = answers.ask, answers.tell
    picker.combo.setCurrentIndex(picker.combo.findData(NAME))
    assert dialog.model.currentData() == NAME
    assert install(qtbot, picker) == ""
    assert answers.asked == [("No pinned hash", "Install anyway")]
    assert dialog.model.currentText().startswith("✓ ")
    with qtbot.waitSignal(dialog.saved) as saved:
        dialog.save()
    assert saved.args[0].model == NAME
    assert json.loads((tmp_path / "settings.json").read_text())["model"] == NAME


def test_closing_the_dialog_stops_a_running_download(
    qtbot: Any,
    fake: Fake,
    tmp_path: Path,
) -> None:
    from voxtray.config import Settings, SettingsStore
    from voxtray.settings_writer import SettingsWriter
    from voxtray.ui.settings.window import SettingsWindow

    fake.server.throttle_s = 0.05
    dialog = SettingsWindow(
        Settings(), fake.store(), SettingsWriter(SettingsStore(tmp_path / "s.json"))
    )
    qtbot.addWidget(dialog)
    dialog.model_picker.ask = Answers(True).ask
    dialog.model_picker.install_button.click()
    qtbot.waitUntil(lambda: dialog.model_picker.progress.value() > 0, timeout=30_000)
    dialog.reject()
    installing = dialog.model_picker._installing
    assert installing is None or not installing.running
    assert (fake.root / ".downloads" / f"{ARCHIVE}.part").is_file()
    assert fake.store().get(NAME) is None


def test_language_applies_to_multilingual_whisper_and_is_saved(qtbot: Any, tmp_path: Path) -> None:
    from voxtray.config import Settings, SettingsStore
    from voxtray.models.catalog import load_catalog
    from voxtray.models.store import ModelStore
    from voxtray.settings_writer import SettingsWriter
    from voxtray.ui.settings.window import SettingsWindow

    store = ModelStore(tmp_path / "models", load_catalog())
    dialog = SettingsWindow(
        Settings(), store, SettingsWriter(SettingsStore(tmp_path / "settings.json"))
    )
    qtbot.addWidget(dialog)
    dialog.model.setCurrentIndex(dialog.model.findData("whisper-tiny.en"))
    assert not dialog.language.isEnabled()
    dialog.model.setCurrentIndex(dialog.model.findData("whisper-base"))
    assert dialog.language.isEnabled()
    dialog.model_installed = lambda name: True  # type: ignore[method-assign]
    dialog.language.setCurrentText("DE ")
    with qtbot.waitSignal(dialog.saved) as saved:
        dialog.save()
    assert saved.args[0].language == "de"
    assert saved.args[0].model == "whisper-base"
