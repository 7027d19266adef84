"""Replacements: a table of what is said and what is written instead."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


class ReplacementsEditor(QWidget):
    """Reads and writes the setting's text, one `spoken -> written` a line; an empty row
    is an empty line."""

    changed = Signal()

    def __init__(self, text: str) -> None:
        super().__init__()
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["You say", "Written as"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table; arrows move in it
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAccessibleName("Replacements")
        self.table.setAccessibleDescription(
            "one row per phrase; arrow keys move between cells, F2 edits"
        )
        self.table.setMinimumHeight(120)
        self.add_button = QPushButton("Add r&ow")
        self.add_button.setAccessibleName("Add a replacement")
        self.remove_button = QPushButton("Remove ro&w")
        self.remove_button.setAccessibleName("Remove the selected replacement")
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        self.add_button.clicked.connect(lambda: self.add_row())
        self.remove_button.clicked.connect(self.remove_selected)
        self.table.itemChanged.connect(lambda _item: self.changed.emit())
        self.setPlainText(text)

    def add_row(self, spoken: str = "", written: str = "") -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.table.setItem(row, 0, QTableWidgetItem(spoken))
        self.table.setItem(row, 1, QTableWidgetItem(written))
        first = self.table.item(row, 0)
        if not spoken and first is not None:
            self.table.setCurrentCell(row, 0)
            self.table.editItem(first)
        self.changed.emit()

    def remove_selected(self) -> None:
        for row in sorted({i.row() for i in self.table.selectedIndexes()}, reverse=True):
            self.table.removeRow(row)
        self.changed.emit()

    def rows(self) -> list[tuple[str, str]]:
        found = []
        for row in range(self.table.rowCount()):
            cells = [self.table.item(row, column) for column in (0, 1)]
            spoken, written = (c.text().strip() if c is not None else "" for c in cells)
            found.append((spoken, written))
        return found

    def setPlainText(self, text: str) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        for line in text.splitlines():
            spoken, _arrow, written = line.partition("->")
            row = self.table.rowCount()
            self.table.insertRow(row)
            self.table.setItem(row, 0, QTableWidgetItem(spoken.strip()))
            self.table.setItem(row, 1, QTableWidgetItem(written.strip()))
        self.table.blockSignals(False)
        self.changed.emit()

    def toPlainText(self) -> str:
        return "\n".join(f"{s} -> {w}" if s or w else "" for s, w in self.rows())
