"""The History window: past dictations searched (FTS5), copied, typed again (or as said,
before clean-up), played, re-transcribed, cleaned up again, corrected, deleted and exported.

Questions to the user (confirm a delete, where to export, what a correction teaches) go
through replaceable callables, so tests and scripts answer them without a modal dialog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QItemSelectionModel, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from voxtray.audio.playback import Player, play_recording
from voxtray.errors import VoxtrayError, first_line
from voxtray.history.audio import AudioArchive
from voxtray.history.corrections import correction, difference_html
from voxtray.history.export import ExportFormat, export, write_export
from voxtray.history.store import Entry, History
from voxtray.ui.background import run_in_background
from voxtray.ui.history_cleanup import clean_again, cleanup_difference
from voxtray.ui.history_rows import COLUMNS, dictations, item
from voxtray.ui.history_rows import row as row_cells

if TYPE_CHECKING:
    from voxtray.cleanup import Cleaner

PAGE = 500
"""Entries listed at most; the search narrows the rest."""
FEEDBACK_MS = 2500
EVERY = 2**62
"""An export with nothing selected takes every entry the search finds, listed or not."""


class Learn:
    """What the user chose to do with a correction."""

    NOTHING = ""
    REPLACEMENT = "replacement"
    VOCABULARY = "vocabulary"


def _ask_confirm(parent: QWidget, question: str) -> bool:
    answer = QMessageBox.question(parent, "Voxtray history", question)
    return answer == QMessageBox.StandardButton.Yes


def _ask_export(parent: QWidget) -> tuple[Path, ExportFormat] | None:
    filters = {f"{fmt.value.upper()} (*.{fmt.value})": fmt for fmt in ExportFormat}
    name, chosen = QFileDialog.getSaveFileName(
        parent, "Export dictations", "dictations.txt", ";;".join(filters)
    )
    if not name:
        return None
    fmt = filters.get(chosen, ExportFormat.TXT)
    suffix = Path(name).suffix.lstrip(".").lower()
    return Path(name), ExportFormat(suffix) if suffix in set(ExportFormat) else fmt


def _ask_learn(parent: QWidget, heard: str, meant: str) -> str:
    box = QMessageBox(parent)
    box.setWindowTitle("Voxtray history")
    box.setText(f"Should Voxtray learn this correction?\n“{heard}” → “{meant}”")
    replace = box.addButton("Add as a &replacement", QMessageBox.ButtonRole.AcceptRole)
    word = box.addButton(f"Add “{meant}” to the &vocabulary", QMessageBox.ButtonRole.AcceptRole)
    box.addButton("&Not now", QMessageBox.ButtonRole.RejectRole)
    box.exec()
    if box.clickedButton() is replace:
        return Learn.REPLACEMENT
    return Learn.VOCABULARY if box.clickedButton() is word else Learn.NOTHING


class HistoryWindow(QWidget):
    """Past dictations, newest first.

    Args:
        history: The store to read and change.
        audio: Where entries' kept recordings are.
        retention: (megabytes, days) of audio kept, shown to the user.
        models: Installed models a re-run may use besides the loaded one.
    """

    type_again_requested = Signal(str)
    rerun_requested = Signal(int, str)  # entry id, model (empty: the loaded one)
    learn_requested = Signal(str, str, str)  # Learn kind, heard, meant
    settings_requested = Signal()

    def __init__(
        self,
        history: History,
        audio: AudioArchive,
        retention: tuple[int, int],
        models: Sequence[str] = (),
        parent: QWidget | None = None,
        cleaner: Callable[[], Cleaner | None] = lambda: None,
        cleanup_wait_s: float = 30.0,
    ) -> None:
        super().__init__(parent)
        self.history = history
        self.audio = audio
        self.cleaner = cleaner
        self.cleanup_wait_s = cleanup_wait_s
        self.player: Player | None = None
        self.confirm: Callable[[str], bool] = lambda question: _ask_confirm(self, question)
        self.ask_export: Callable[[], tuple[Path, ExportFormat] | None] = lambda: _ask_export(self)
        self.ask_learn: Callable[[str, str], str] = lambda heard, meant: _ask_learn(
            self, heard, meant
        )
        self.entries: list[Entry] = []
        self.setWindowTitle("Voxtray history")
        self.setAccessibleName("Voxtray history")
        self.resize(900, 600)
        self._build(retention, models)
        self._shortcuts()
        self.refresh()
        if self.entries:
            self.choose_row(0)

    # --- layout -----------------------------------------------------------------------

    def _build(self, retention: tuple[int, int], models: Sequence[str]) -> None:
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Words in the text (Ctrl+F)")
        self.search.setAccessibleName("Search history")
        self.search.setClearButtonEnabled(True)
        search_label = QLabel("&Search:")
        search_label.setBuddy(self.search)
        self.show_empty = QCheckBox("Show &empty dictations")
        self.show_empty.setAccessibleName("Show empty dictations")
        top.addWidget(search_label)
        top.addWidget(self.search, 1)
        top.addWidget(self.show_empty)
        layout.addLayout(top)

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setAccessibleName("Dictations")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setTabKeyNavigation(False)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table_label = QLabel("D&ictations, newest first:")
        table_label.setBuddy(self.table)
        layout.addWidget(table_label)
        layout.addWidget(self.table, 3)

        text_label = QLabel("&Text of the selected dictation:")
        self.text = QPlainTextEdit()
        self.text.setAccessibleName("Text of the selected dictation")
        self.text.setTabChangesFocus(True)
        text_label.setBuddy(self.text)
        layout.addWidget(text_label)
        layout.addWidget(self.text, 1)
        self.difference = QLabel()
        self.difference.setAccessibleName("Difference from the original")
        self.difference.setWordWrap(True)
        self.difference.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.difference)

        buttons = QHBoxLayout()
        self.copy_button = self._button(buttons, "&Copy", "Copy the text", self.copy_selected)
        self.save_button = self._button(
            buttons, "Sa&ve text", "Save the edited text", self.save_text
        )
        self.type_button = self._button(
            buttons, "T&ype again", "Type the text again", self.type_again
        )
        self.raw_button = self._button(
            buttons, "Type r&aw text", "Type the text as said, before clean-up", self.type_raw
        )
        self.cleanup_button = self._button(
            buttons, "Clean &up again", "Clean up the text as said again", self.clean_up_again
        )
        self.play_button = self._button(buttons, "&Play audio", "Play the kept audio", self.play)
        self.rerun_button = self._button(
            buttons, "&Re-transcribe", "Transcribe the kept audio again", self.rerun
        )
        self.rerun_model = QComboBox()
        self.rerun_model.setAccessibleName("Model to re-transcribe with")
        self.rerun_model.addItem("the current model", "")
        for name in models:
            self.rerun_model.addItem(name, name)
        model_label = QLabel("&with:")
        model_label.setBuddy(self.rerun_model)
        buttons.addWidget(model_label)
        buttons.addWidget(self.rerun_model)
        self.delete_button = self._button(
            buttons, "&Delete", "Delete the selected dictations", self.delete_selected
        )
        self.export_button = self._button(
            buttons, "E&xport…", "Export the selection, or every entry found", self.export_entries
        )
        buttons.addStretch(1)
        self.close_button = self._button(buttons, "C&lose", "Close the history", self.close)
        layout.addLayout(buttons)

        bottom = QHBoxLayout()
        self.status = QLabel()
        self.status.setAccessibleName("History status")
        megabytes, days = retention
        kept = (
            f"Audio is kept for {days} days, up to {megabytes} MB in all."
            if megabytes > 0 and days > 0
            else "No audio is kept."
        )
        self.retention = QLabel(kept)
        self.retention.setAccessibleName("Audio retention")
        self.settings_button = self._button(
            bottom, "Rete&ntion settings…", "Open the settings", self.settings_requested.emit
        )
        bottom.insertWidget(0, self.status, 1)
        bottom.insertWidget(1, self.retention)
        layout.addLayout(bottom)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(80)
        self._search_timer.timeout.connect(self.refresh)
        self.search.textChanged.connect(lambda _text: self._search_timer.start())
        self.show_empty.toggled.connect(lambda _on: self.refresh())
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self._feedback = QTimer(self)
        self._feedback.setSingleShot(True)
        self._feedback.timeout.connect(lambda: self.status.setText(""))

    def _button(
        self, row: QHBoxLayout, text: str, name: str, slot: Callable[[], object]
    ) -> QPushButton:
        button = QPushButton(text)
        button.setAccessibleName(name)
        button.clicked.connect(lambda _checked=False: slot())
        row.addWidget(button)
        return button

    def _shortcuts(self) -> None:
        focus = QShortcut(QKeySequence.StandardKey.Find, self)
        focus.activated.connect(self.focus_search)
        close = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        close.activated.connect(self.close)
        table = Qt.ShortcutContext.WidgetShortcut
        delete = QShortcut(QKeySequence.StandardKey.Delete, self.table, context=table)
        delete.activated.connect(self.delete_selected)
        copy = QShortcut(QKeySequence.StandardKey.Copy, self.table, context=table)
        copy.activated.connect(self.copy_selected)

    # --- reading ----------------------------------------------------------------------

    @Slot()
    def refresh(self) -> None:
        """List the entries the search and the empty toggle select, keeping the selection."""
        kept = {entry.id for entry in self.selected()}
        try:
            self.entries = self.history.search(
                self.search.text(), include_empty=self.show_empty.isChecked(), limit=PAGE
            )
        except (VoxtrayError, RuntimeError) as exc:
            self.say(first_line(exc))
            return
        self.table.clearSelection()
        self.table.setRowCount(len(self.entries))
        for row, entry in enumerate(self.entries):
            for column, value in enumerate(row_cells(entry)):
                self.table.setItem(row, column, item(value, entry.text if column == 0 else ""))
            if entry.id in kept:
                self.choose_row(row, add=True)
        self._selection_changed()
        damaged = sum(entry.damage is not None for entry in self.entries)
        if damaged:
            self.say(f"{dictations(damaged)} damaged: shown with what could be read")

    def selected(self) -> list[Entry]:
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        return [self.entries[row] for row in rows if row < len(self.entries)]

    def current(self) -> Entry | None:
        chosen = self.selected()
        return chosen[0] if len(chosen) == 1 else None

    @Slot()
    def _selection_changed(self) -> None:
        entry = self.current()
        self.text.setPlainText(entry.text if entry is not None else "")
        self.text.setEnabled(entry is not None)
        self.difference.setText(self._difference(entry) if entry is not None else "")
        has_audio = entry is not None and self.audio.has(entry.id)
        for button in (self.save_button, self.type_button):
            button.setEnabled(entry is not None)
        self.raw_button.setEnabled(entry is not None and entry.raw_text not in (None, entry.text))
        self.cleanup_button.setEnabled(entry is not None and bool(entry.text.strip()))
        self.play_button.setEnabled(has_audio)
        self.rerun_button.setEnabled(has_audio)
        for button in (self.copy_button, self.delete_button):
            button.setEnabled(bool(self.selected()))

    def _difference(self, entry: Entry) -> str:
        if entry.rerun_of is None:
            return cleanup_difference(entry)
        original = self.history.get(entry.rerun_of)
        if original is None:
            return f"Re-run of dictation #{entry.rerun_of} (deleted)."
        changes = difference_html(original.text, entry.text)
        return f"Re-run of #{original.id} ({original.model}): {changes}"

    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def say(self, message: str) -> None:
        """A short note in the status line that clears itself."""
        self.status.setText(message)
        self._feedback.start(FEEDBACK_MS)

    def choose_row(self, row: int, *, add: bool = False) -> None:
        """Select the row (alone, or beside the selection with `add`) and make it current."""
        flag = QItemSelectionModel.SelectionFlag
        how = (flag.Select if add else flag.ClearAndSelect) | flag.Rows
        self.table.selectionModel().setCurrentIndex(self.table.model().index(row, 0), how)

    def select_id(self, entry_id: int) -> None:
        for row, entry in enumerate(self.entries):
            if entry.id == entry_id:
                self.choose_row(row)
                return

    # --- actions ----------------------------------------------------------------------

    @Slot()
    def copy_selected(self) -> None:
        chosen = self.selected()
        clipboard = QGuiApplication.clipboard()
        if not chosen or clipboard is None:
            return
        clipboard.setText("\n".join(entry.text for entry in reversed(chosen)))
        self.say("Copied" if len(chosen) == 1 else f"Copied {len(chosen)} dictations")

    @Slot()
    def type_again(self) -> None:
        entry = self.current()
        if entry is not None:
            self.type_again_requested.emit(entry.text)
            self.say("Typing into the window used before")

    @Slot()
    def type_raw(self) -> None:
        entry = self.current()
        if entry is not None and entry.raw_text is not None:
            self.type_again_requested.emit(entry.raw_text)
            self.say("Typing the text as said into the window used before")

    @Slot()
    def clean_up_again(self) -> None:
        entry, cleaner = self.current(), self.cleaner()
        if entry is None:
            return
        if cleaner is None:
            self.say("Clean-up is off: turn it on in Settings, Clean-up")
            return
        self.say(f"Cleaning up #{entry.id} again…")
        self.cleanup_button.setEnabled(False)
        wait_s, history = self.cleanup_wait_s, self.history
        run_in_background(
            lambda: clean_again(cleaner, entry, history, wait_s),
            lambda said: self._cleaned(entry.id, said),
            "voxtray-cleanup-again",
        )

    def _cleaned(self, entry_id: int, said: str | Exception) -> None:
        self.refresh()
        self.select_id(entry_id)
        self.say(f"#{entry_id}: {said}")

    @Slot()
    def play(self) -> None:
        entry = self.current()
        if entry is None:
            return
        try:
            samples = self.audio.load(entry.id)
        except VoxtrayError as exc:
            self.say(first_line(exc))
            return
        self.say(f"Playing {len(samples) / 16000:.1f} s")
        player = self.player
        run_in_background(lambda: play_recording(samples, player), self._played, "voxtray-play")

    def _played(self, problem: str | Exception | None) -> None:
        if problem is not None:
            self.say(str(problem))

    @Slot()
    def rerun(self) -> None:
        entry = self.current()
        if entry is not None:
            model = str(self.rerun_model.currentData() or "")
            self.say(f"Re-transcribing #{entry.id} with {model or 'the current model'}…")
            self.rerun_requested.emit(entry.id, model)  # whoever serves it may say more

    def rerun_done(self, new_id: int | None) -> None:
        """The app's answer to `rerun_requested`: list and select the new entry."""
        self.refresh()
        if new_id is not None:
            self.select_id(new_id)
            self.say(f"Re-transcribed as #{new_id}")

    @Slot()
    def save_text(self) -> None:
        entry = self.current()
        new = self.text.toPlainText()
        if entry is None or new == entry.text:
            return
        try:
            self.history.update_text(entry.id, new)
        except VoxtrayError as exc:
            self.say(first_line(exc))
            return
        self.refresh()
        self.say("Text saved")
        change = correction(entry.text, new)
        if change is not None:
            kind = self.ask_learn(*change)
            if kind:
                self.learn_requested.emit(kind, *change)

    @Slot()
    def delete_selected(self) -> None:
        chosen = self.selected()
        if not chosen:
            return
        what = "this dictation" if len(chosen) == 1 else f"these {len(chosen)} dictations"
        if not self.confirm(f"Delete {what} and the audio kept with it?"):
            return
        deleted, problems = 0, []
        for entry in chosen:
            try:
                self.history.delete(entry.id)
            except VoxtrayError as exc:
                problems.append(first_line(exc))
                continue
            deleted += 1
            try:
                self.audio.delete(entry.id)
            except VoxtrayError as exc:
                problems.append(first_line(exc))
        self.table.clearSelection()
        self.refresh()
        # The count is what was deleted, not what was selected.
        message = (
            f"Deleted {deleted}"
            if deleted == len(chosen)
            else f"Deleted {deleted} of {len(chosen)}"
        )
        self.say(f"{message} ({problems[0]})" if problems else message)

    @Slot()
    def export_entries(self) -> None:
        target = self.ask_export()
        if target is None:
            return
        path, fmt = target
        try:
            chosen = self.selected() or self.history.search(
                self.search.text(), include_empty=self.show_empty.isChecked(), limit=EVERY
            )
            write_export(path, export(chosen, fmt))
        except VoxtrayError as exc:
            self.say(first_line(exc))
            return
        self.say(f"Exported {len(chosen)} to {path.name}")
