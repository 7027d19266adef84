"""The Model manager window, offscreen with pytest-qt: the catalog table, measuring the
real installed models on a worker thread with the recommended mark following the budget,
and install, cancel and remove through a local HTTP server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QAbstractButton, QWidget

from tests.support.measurements import key_of, measurements_json, written_entry
from tests.support.special_files import SAID, put_special
from tests.support.store import NAME, Fake
from voxtray.choices import Provider
from voxtray.config import Settings
from voxtray.inference.engines import EngineChoice
from voxtray.inference.measured_here import model_stamp
from voxtray.models.download import CHUNK_SIZE
from voxtray.models.measurements import MeasurementCache
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.ui.model_manager import COLUMNS, OVER_BUDGET, RECOMMENDED, ModelManager
from voxtray.ui.settings.model_page import ModelPage
from voxtray.ui.tray import TrayMenu

CPU = EngineChoice(provider=Provider.CPU, threads=2)


def column(manager: ModelManager, title: str) -> dict[str, str]:
    index = COLUMNS.index(title)
    table = manager.table
    return {
        name: (table.item(row, index) or table.item(row, 0)).text()  # type: ignore[union-attr]
        for row, name in enumerate(manager.names())
    }


def test_measure_marks_the_recommended_model_within_the_budget(
    qtbot: Any,
    tmp_path: Path,
    model_store: ModelStore,
    tiny_en: InstalledModel,
    whisper_base: InstalledModel,
) -> None:
    cache = MeasurementCache(tmp_path / "measurements.json")
    manager = ModelManager(model_store, CPU, cache=cache)
    qtbot.addWidget(manager)
    assert set(manager.names()) >= {"whisper-tiny.en", "whisper-base", "parakeet-tdt-0.6b-v2"}
    assert column(manager, "Installed")["whisper-base"] == "yes"
    assert column(manager, "Disk use")["whisper-base"].endswith("MB")
    assert column(manager, "5 s → text")["whisper-base"] == ""

    with qtbot.waitSignal(manager.measured, timeout=300_000) as done:
        manager.measure_button.click()
        assert manager.measuring  # on the worker thread: the GUI thread is free
        assert not manager.measure_button.isEnabled()
    result = done.args[0]
    latency = {m.model: m.latency_ms for m in result.measurements}
    assert latency["whisper-tiny.en"] < latency["whisper-base"]
    assert column(manager, "Ran on")["whisper-base"] == "cpu"
    assert column(manager, "5 s → text")["whisper-tiny.en"].endswith(" ms")

    manager.budget.setValue(int(latency["whisper-base"] * 2) + 1)
    assert column(manager, "Recommended")["whisper-base"] == RECOMMENDED
    assert "Recommended here: whisper-base" in manager.summary.text()
    middle = int((latency["whisper-tiny.en"] + latency["whisper-base"]) / 2)
    manager.budget.setValue(max(middle, manager.budget.minimum()))
    if manager.budget.value() < latency["whisper-base"]:
        assert column(manager, "Recommended")["whisper-tiny.en"] == RECOMMENDED
        assert column(manager, "Recommended")["whisper-base"] == ""

    manager.budget.setValue(manager.budget.minimum())
    if manager.budget.value() < latency["whisper-tiny.en"]:
        assert column(manager, "Recommended")["whisper-tiny.en"] == OVER_BUDGET
        assert "No installed model fits" in manager.summary.text()

    again = ModelManager(model_store, CPU, cache=cache)  # kept results, nothing measured
    qtbot.addWidget(again)
    assert again.results.keys() >= {"whisper-tiny.en", "whisper-base"}
    assert not again.measuring


def test_install_cancel_resume_and_remove_from_the_table(
    qtbot: Any, tmp_path: Path, fake: Fake
) -> None:
    fake.server.throttle_s = 0.02
    manager = ModelManager(fake.store(), CPU, cache=MeasurementCache(tmp_path / "m.json"))
    qtbot.addWidget(manager)
    picker = manager.picker
    picker.ask = lambda *_args: True
    picker.tell = lambda *_args: None
    manager.select(NAME)
    assert manager.selected() == NAME
    assert column(manager, "Installed")[NAME] == "no"
    with qtbot.waitSignal(picker.install_done, timeout=60_000) as done:
        picker.install_button.click()
        qtbot.waitUntil(lambda: picker.progress.value() >= CHUNK_SIZE, timeout=30_000)
        picker.cancel_button.click()
    assert "cancelled" in done.args[0]
    fake.server.throttle_s = 0.0
    with qtbot.waitSignal(picker.install_done, timeout=60_000):
        picker.install_button.click()
    assert column(manager, "Installed")[NAME] == "yes"
    assert column(manager, "Disk use")[NAME].endswith("MB")
    with qtbot.waitSignal(picker.removed):
        picker.remove_button.click()
    assert column(manager, "Installed")[NAME] == "no"
    assert fake.store().get(NAME) is None


def test_every_control_has_a_name_and_a_key(
    qtbot: Any, tmp_path: Path, model_store: ModelStore
) -> None:
    manager = ModelManager(model_store, CPU, cache=MeasurementCache(tmp_path / "m.json"))
    qtbot.addWidget(manager)
    for widget in manager.findChildren(QWidget):
        if widget.objectName().startswith("qt_"):  # Qt's own parts (the table's corner)
            continue
        if isinstance(widget, QAbstractButton) or widget in (manager.table, manager.budget):
            assert widget.accessibleName() or (
                isinstance(widget, QAbstractButton) and widget.text()
            ), widget
            assert widget.focusPolicy() != widget.focusPolicy().NoFocus, widget
    for button in (manager.measure_button, manager.picker.install_button):
        assert "&" in button.text()


def test_opened_from_the_tray_and_the_model_page(qtbot: Any, model_store: ModelStore) -> None:
    menu = TrayMenu()
    action = next(a for a in menu.menu.actions() if a.text() == "&Models…")
    with qtbot.waitSignal(menu.models_requested):
        action.trigger()
    page = ModelPage(Settings(), model_store)
    qtbot.addWidget(page)
    assert page.manager.accessibleName() == "Open the model manager"
    with qtbot.waitSignal(page.models_requested):
        page.manager.click()


def _damaged(tiny: InstalledModel, **changes: object) -> Callable[[Path], None]:
    entry = written_entry(tiny.name, model_stamp(tiny), **changes)
    return lambda path: path.write_bytes(measurements_json({key_of(tiny.name): entry}))


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "case", ["latency as text", "latency null", "latency negative", "deep nesting", *SAID]
)
def test_the_window_opens_on_a_hostile_measurements_file(
    qtbot: Any, tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel, case: str
) -> None:
    spoil: Callable[[Path], None] = {
        "latency as text": _damaged(tiny_en, latency_ms="100"),
        "latency null": _damaged(tiny_en, latency_ms=None),
        "latency negative": _damaged(tiny_en, latency_ms=-5.0),
        "deep nesting": lambda path: path.write_bytes(b"[" * 100_000 + b"]" * 100_000),
        **{kind: (lambda path, kind=kind: put_special(kind, path)) for kind in SAID},
    }[case]
    path = tmp_path / "measurements.json"
    spoil(path)
    manager = ModelManager(model_store, CPU, cache=MeasurementCache(path))
    qtbot.addWidget(manager)
    assert column(manager, "5 s → text")[tiny_en.name] == ""  # nothing shown as measured
    assert str(path) in manager.summary.text()
    assert manager.summary.text().endswith("measuring again.")
    assert manager.measure_button.isEnabled()


def test_results_that_cannot_be_saved_are_shown_and_the_window_stays_usable(
    qtbot: Any, tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel
) -> None:
    folder = tmp_path / "measurements.json"
    folder.mkdir()
    cache = MeasurementCache(folder)
    manager = ModelManager(model_store, CPU, budget_ms=10_000, cache=cache)
    qtbot.addWidget(manager)
    with qtbot.waitSignal(manager.measured, timeout=120_000):
        manager.measure([tiny_en.name])
    assert not manager.measuring
    assert manager.measure_button.isEnabled()
    assert column(manager, "5 s → text")[tiny_en.name].endswith(" ms")
    summary = manager.summary.text()
    assert summary.startswith(f"Recommended here: {tiny_en.name}")
    assert f"Cannot write {folder}: Is a directory; the results are not kept" in summary
