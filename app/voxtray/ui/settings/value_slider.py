"""A slider that says its value and what its ends mean."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QSlider, QWidget

from voxtray.settings_schema import Spec


class ValueSlider(QWidget):
    """`spec`'s range in hundredths (a 0.05 to 0.95 setting is 5 to 95 on the slider)."""

    def __init__(self, spec: Spec[object], value: float) -> None:
        super().__init__()
        low, top = spec.low, spec.top()
        assert low is not None
        assert top is not None
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(round(low * 100), round(top * 100))
        self.slider.setPageStep(5)
        self.slider.setValue(round(value * 100))
        self.shown = QLabel()
        self.shown.setMinimumWidth(40)
        lower = QLabel(f"Low: {spec.low_means}")
        higher = QLabel(f"High: {spec.high_means}")
        higher.setAlignment(Qt.AlignmentFlag.AlignRight)
        for end in (lower, higher):
            end.setWordWrap(True)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.slider, 0, 0, 1, 2)
        grid.addWidget(self.shown, 0, 2)
        grid.addWidget(lower, 1, 0)
        grid.addWidget(higher, 1, 1)
        self.slider.valueChanged.connect(self._show)
        self._show()

    def value(self) -> float:
        return self.slider.value() / 100

    def _show(self) -> None:
        text = f"{self.value():.2f}"
        self.shown.setText(text)
        self.slider.setAccessibleDescription(f"{text}; {self.slider.accessibleDescription()}")
