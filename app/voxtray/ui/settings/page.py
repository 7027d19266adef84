"""A page of the settings window: a heading and a form inside a scroll area, and the
values of the settings it shows."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFormLayout, QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget

from voxtray.config import Settings
from voxtray.settings_schema import Key, Section

Getter = Callable[[], object]


class Page(QScrollArea):
    """Subclasses fill `form` and `bind` each key they show to what reads it back."""

    section: Section

    def __init__(self, settings: Settings, intro: str = "") -> None:
        super().__init__()
        self.settings = settings
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        # Tab goes to the controls, which scroll into view; the area itself is no stop.
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setAccessibleName(f"{self.section.value} settings")
        body = QWidget()
        self.outer = QVBoxLayout(body)
        heading = QLabel(f"<h2>{self.section.value}</h2>")
        heading.setAccessibleName(self.section.value)
        self.outer.addWidget(heading)
        if intro:
            note = QLabel(intro)
            note.setWordWrap(True)
            self.outer.addWidget(note)
        self.form = QFormLayout()
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.outer.addLayout(self.form)
        self.outer.addStretch(1)
        self.setWidget(body)
        self._getters: dict[Key, Getter] = {}

    def bind(self, key: Key, getter: Getter) -> None:
        self._getters[key] = getter

    def shown_keys(self) -> frozenset[Key]:
        return frozenset(self._getters)

    def values(self) -> dict[Key, object]:
        return {key: get() for key, get in self._getters.items()}
