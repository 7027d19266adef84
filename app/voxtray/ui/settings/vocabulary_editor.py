"""The vocabulary: a list of words and names to add to, remove from, import and export."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QWidget,
)

from voxtray.text.vocabulary import (
    MAX_ENTRIES,
    VocabularyReview,
    parse_vocabulary,
    review_vocabulary,
)

PickFile = Callable[[QWidget, bool], Path | None]
"""(parent, for saving) -> the file the user chose, or None."""


def pick_with_dialog(parent: QWidget, saving: bool) -> Path | None:
    title, kinds = "Vocabulary file", "Text files (*.txt);;All files (*)"
    if saving:
        name, _ = QFileDialog.getSaveFileName(parent, title, "vocabulary.txt", kinds)
    else:
        name, _ = QFileDialog.getOpenFileName(parent, title, "", kinds)
    return Path(name) if name else None


class VocabularyEditor(QWidget):
    changed = Signal()

    def __init__(self, text: str) -> None:
        super().__init__()
        self.pick: PickFile = pick_with_dialog
        self.list = QListWidget()
        self.list.setAccessibleName("Vocabulary entries")
        self.list.setMinimumHeight(110)
        self.entry = QLineEdit()
        self.entry.setPlaceholderText("a word or name, e.g. Kubernetes")
        self.entry.setAccessibleName("New vocabulary entry")
        self.add_button = QPushButton("&Add")
        self.remove_button = QPushButton("Re&move")
        self.import_button = QPushButton("&Import…")
        self.export_button = QPushButton("E&xport…")
        for button, said in (
            (self.add_button, "Add the entry"),
            (self.remove_button, "Remove the selected entries"),
            (self.import_button, "Import entries from a text file"),
            (self.export_button, "Export the entries to a text file"),
        ):
            button.setAccessibleName(said)
        self.count = QLabel()
        self.list.setSelectionMode(QListWidget.SelectionMode.ExtendedSelection)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.entry, 0, 0)
        grid.addWidget(self.add_button, 0, 1)
        grid.addWidget(self.list, 1, 0, 3, 1)
        grid.addWidget(self.remove_button, 1, 1)
        grid.addWidget(self.import_button, 2, 1)
        grid.addWidget(self.export_button, 3, 1, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.count, 4, 0, 1, 2)
        self.add_button.clicked.connect(self.add_entry)
        self.entry.installEventFilter(self)
        self.remove_button.clicked.connect(self.remove_selected)
        self.import_button.clicked.connect(self.import_file)
        self.export_button.clicked.connect(self.export_file)
        self.setPlainText(text)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # Enter in the entry adds it; it must not reach the window's Save.
        if (
            watched is self.entry
            and isinstance(event, QKeyEvent)
            and event.type() == QEvent.Type.KeyPress
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        ):
            self.add_entry()
            return True
        return super().eventFilter(watched, event)

    def entries(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def setPlainText(self, text: str) -> None:
        self.list.clear()
        for line in text.splitlines():
            for entry in line.split(","):
                if entry.strip():
                    self.list.addItem(entry.strip())
        self._count()

    def toPlainText(self) -> str:
        return "\n".join(self.entries())

    def add_entry(self) -> None:
        for entry in self.entry.text().split(","):
            if entry.strip() and entry.strip() not in self.entries():
                self.list.addItem(entry.strip())
        self.entry.clear()
        self._count()

    def remove_selected(self) -> None:
        for item in self.list.selectedItems():
            self.list.takeItem(self.list.row(item))
        self._count()

    def import_file(self) -> None:
        path = self.pick(self, False)
        if path is None:
            return
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.count.setText(f"Could not read {path.name}: {exc.__class__.__name__}")
            return
        known = set(self.entries())
        for entry in parse_vocabulary(text):
            if entry not in known:
                self.list.addItem(entry)
        self._count()

    def export_file(self) -> None:
        path = self.pick(self, True)
        if path is None:
            return
        try:
            path.write_text(self.toPlainText() + "\n", encoding="utf-8")
        except OSError as exc:
            self.count.setText(f"Could not write {path.name}: {exc.strerror or exc}")
            return
        self.count.setText(f"Exported {self.list.count()} entries to {path.name}.")

    def _count(self) -> None:
        self.count.setText(describe(review_vocabulary(self.toPlainText())))
        self.changed.emit()


def describe(review: VocabularyReview) -> str:
    """The count line: how many entries, and what the vocabulary leaves out and why."""
    size = len(review.entries)
    over = f" (at most {MAX_ENTRIES}: remove {size - MAX_ENTRIES})" if size > MAX_ENTRIES else ""
    said = [f"{size} of {MAX_ENTRIES} entries{over}"]
    if review.duplicates:
        said.append(f"{_entries(review.duplicates)} that repeat another left out")
    if review.without_letters:
        said.append(f"{_entries(review.without_letters)} without a letter left out")
    if review.common:
        shown = ", ".join(review.common[:5]) + (", …" if len(review.common) > 5 else "")
        said.append(f"common words not favoured, recognition knows them already: {shown}")
    return "; ".join(said)


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"
