"""The Model manager window: the catalog as a table (size, languages, licence, installed,
disk use, measured speed), Install with progress, speed, time left and Cancel, Remove, and
"Measure on this machine" with the "recommended here" mark for a budget the user sets.

Install, Cancel and Remove are the settings window's `ModelPicker`, driven by the table's
selection; measuring runs in the background (`run_in_background`), never on the GUI thread."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from voxtray.errors import first_line
from voxtray.inference.engines import EngineChoice
from voxtray.inference.measure import kept_results, measure_all
from voxtray.models.listing import languages_label
from voxtray.models.measurements import Measured, Measurement, MeasurementCache, default_cache
from voxtray.models.recommend import DEFAULT_BUDGET_MS, Recommendation, recommend
from voxtray.models.store import ModelStore
from voxtray.settings_schema import Key, int_bounds
from voxtray.ui.background import Job, on_gui_thread, run_in_background
from voxtray.ui.model_picker import ModelPicker
from voxtray.ui.plain_words import plain

COLUMNS = (
    "Model",
    "Size",
    "Languages",
    "Licence",
    "Installed",
    "Disk use",
    "5 s → text",
    "RTF",
    "Memory",
    "Ran on",
    "Words right",
    "Recommended",
)
RECOMMENDED = "★ recommended here"
OVER_BUDGET = "fastest, over the budget"


def words_right(measurement: Measurement) -> str:
    """The accuracy check's result: the share of the clip's words heard right, and a
    warning where the precision gives wrong words here (auto then avoids it)."""
    right = f"{100 * max(0.0, 1 - measurement.wer):.0f} %"
    return f"{right}, wrong words in {measurement.precision}" if measurement.wrong_text else right


def disk_use_mb(folder: Path) -> float:
    if not folder.is_dir():
        return 0.0
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def measure_models(
    store: ModelStore,
    names: list[str],
    choice: EngineChoice,
    cache: MeasurementCache,
    progress: Callable[[str], None] | None = None,
) -> Callable[[], Measured]:
    """The call that measures the named models, for `run_in_background`."""

    def measure() -> Measured:
        models = [store.require(name) for name in names]
        return measure_all(models, choice, cache=cache, progress=progress)

    return measure


class ModelManager(QWidget):
    """The catalog, installs and removals, and this machine's measurements."""

    measured = Signal(object)  # Recommendation
    budget_changed = Signal(int)  # the budget the user set, in ms: a setting to save

    def __init__(
        self,
        store: ModelStore,
        choice: EngineChoice | None = None,
        *,
        active: str = "",
        budget_ms: int = DEFAULT_BUDGET_MS,
        cache: MeasurementCache | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Voxtray models")
        self.store = store
        self.choice = choice or EngineChoice()
        self.cache = cache or default_cache()
        self.results: dict[str, Measurement] = {}
        self.notes: list[str] = []  # what went wrong with the kept measurements
        self.recommendation: Recommendation | None = None
        self._measuring: Job | None = None
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setAccessibleName("Models")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.picker = ModelPicker(store, "", active=active)
        self.picker.combo.setVisible(False)
        self.picker.install_button.setAccessibleName("Install the selected model")
        self.picker.cancel_button.setAccessibleName("Cancel the download")
        self.picker.remove_button.setAccessibleName("Remove the selected model")
        self.budget = QSpinBox()
        self.budget.setRange(*int_bounds(Key.RECOMMEND_BUDGET_MS))
        self.budget.setSingleStep(50)
        self.budget.setSuffix(" ms")
        self.budget.setValue(budget_ms)
        self.budget.setAccessibleName("Latency budget for 5 s of speech")
        budget_label = QLabel("&Budget (release → text for 5 s of speech):")
        budget_label.setBuddy(self.budget)
        self.measure_button = QPushButton("&Measure on this machine")
        self.measure_button.setAccessibleName("Measure on this machine")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName("Recommendation")
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByKeyboard)
        table_label = QLabel("The &catalog: pick a model to install, remove or measure it")
        table_label.setBuddy(self.table)  # the table's label relation, read by screen readers
        layout = QVBoxLayout(self)
        layout.addWidget(table_label)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.picker)
        row = QHBoxLayout()
        row.addWidget(budget_label)
        row.addWidget(self.budget)
        row.addStretch(1)
        row.addWidget(self.measure_button)
        layout.addLayout(row)
        layout.addWidget(self.summary)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.picker.installed.connect(lambda _name: self.refresh())
        self.picker.removed.connect(lambda _name: self.refresh())
        self.measure_button.clicked.connect(lambda _checked=False: self.measure())
        self.budget.valueChanged.connect(lambda _value: self._recommend())
        self.budget.editingFinished.connect(lambda: self.budget_changed.emit(self.budget.value()))
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.close)
        self.resize(980, 460)
        self._load_kept()
        self.refresh()
        installed = self._installed_speech()
        self.select(active if active in installed else (installed or [""])[0])
        if not self.table.selectedItems() and self.table.rowCount():
            self.table.selectRow(0)

    # --- table ---------------------------------------------------------------------------

    def names(self) -> list[str]:
        return [self._name_at(r) for r in range(self.table.rowCount())]

    def _name_at(self, row: int) -> str:
        item = self.table.item(row, 0)
        return str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else ""

    def selected(self) -> str:
        return self.picker.selected()

    def select(self, name: str) -> None:
        for row, known in enumerate(self.names()):
            if known == name:
                self.table.selectRow(row)
                self.table.scrollTo(self.table.model().index(row, 0))

    def refresh(self) -> None:
        """Re-read the store and redraw the table, keeping the selection."""
        keep = self.selected()
        self.picker.refresh(keep)
        rows = list(self.picker.rows.values())
        self.table.setRowCount(len(rows))
        result = self.recommendation
        pick = result.pick if result is not None else None
        mark = RECOMMENDED if result is not None and result.fits else OVER_BUDGET
        for r, row in enumerate(rows):
            m = self.results.get(row.name) if row.installed else None
            disk = disk_use_mb(self.store.path(row.name)) if row.installed else 0.0
            cells = (
                row.title,
                f"{row.size_mb:.0f} MB",
                languages_label(row.languages),
                row.license,
                "yes" if row.installed else "no",
                f"{disk:.0f} MB" if row.installed else "",
                f"{m.latency_ms:.0f} ms" if m else "",
                f"{m.rtf:.3f}" if m else "",
                f"{m.memory_mb:.0f} MB" if m else "",
                m.provider if m else "",
                words_right(m) if m else "",
                mark if pick is not None and pick.model == row.name else "",
            )
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c == 0:
                    item.setData(Qt.ItemDataRole.UserRole, row.name)
                    item.setToolTip(row.description)
                self.table.setItem(r, c, item)
        if keep:
            self.select(keep)

    def _selection_changed(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or self.picker.busy:
            return
        name = self._name_at(rows[0].row())
        combo = self.picker.combo
        combo.setCurrentIndex(max(combo.findData(name), 0))

    # --- measuring -----------------------------------------------------------------------

    @property
    def measuring(self) -> bool:
        return self._measuring is not None

    def _installed_speech(self) -> list[str]:
        return [m.name for m in self.store.installed() if m.manifest["family"] != "silero-vad"]

    def _load_kept(self) -> None:
        """Show the measurements already kept for this machine, without measuring."""
        models = [self.store.require(name) for name in self._installed_speech()]
        kept = kept_results(models, self.choice, self.cache)
        self.results.update({m.model: m for m in kept.results})
        self.notes = kept.notes
        self._recommend(redraw=False)

    def measure(self, names: list[str] | None = None) -> None:
        """Measure `names` (default: every installed speech model) on a worker thread."""
        if self.measuring:
            return
        chosen = names if names is not None else self._installed_speech()
        if not chosen:
            self.summary.setText("Install a speech model first.")
            return
        self.measure_button.setEnabled(False)
        self.summary.setText("Measuring…")
        progress = on_gui_thread(self._show_progress)
        measure = measure_models(self.store, chosen, self.choice, self.cache, progress)
        self._measuring = run_in_background(measure, self._measured, "voxtray-measure")

    def _show_progress(self, message: str) -> None:
        self.summary.setText(message[:1].upper() + message[1:] + "…")

    def _measured(self, measured: Measured | Exception) -> None:
        self._measuring = None
        self.measure_button.setEnabled(True)
        if isinstance(measured, Exception):  # any failure must still end "Measuring…"
            self.summary.setText(f"Could not measure: {plain(first_line(measured))}")
            return
        self.results.update({m.model: m for m in measured.results})
        self.notes = measured.notes
        self._recommend()

    def _recommend(self, *, redraw: bool = True) -> None:
        notes = [sentence(note) for note in self.notes]
        if not self.results:
            self.summary.setText(" ".join(notes))
            return
        installed = {m.name for m in self.store.installed()}
        measured = [m for name, m in self.results.items() if name in installed]
        result = recommend(measured, self.budget.value(), self.store.catalog, installed)
        self.recommendation = result
        self.summary.setText(" ".join([summary_text(result), *notes]))
        if redraw:
            self.refresh()
        self.measured.emit(result)

    def shutdown(self, timeout_ms: int = 60_000) -> None:
        """Let a running install or measurement end before the window goes."""
        self.picker.shutdown(timeout_ms)
        if self._measuring is not None:
            self._measuring.wait(timeout_ms / 1000)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)


def sentence(note: str) -> str:
    """A one-line note from measuring as a sentence of the summary."""
    text = plain(note)
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def summary_text(result: Recommendation) -> str:
    budget = f"{result.budget_ms:.0f} ms"
    if result.pick is None:
        return "Nothing measured yet."
    if result.fits:
        text = (
            f"Recommended here: {result.pick.model}, text {result.pick.latency_ms:.0f} ms "
            f"after release for 5 s of speech (budget {budget})."
        )
    else:
        text = (
            f"No installed model fits {budget}; the fastest is {result.pick.model} "
            f"({result.pick.latency_ms:.0f} ms)."
        )
    if result.better:
        few = ", ".join(f"{c.name} ({c.download_mb:.0f} MB)" for c in result.better[:3])
        text += f" Could be more accurate: {few}."
    return text
