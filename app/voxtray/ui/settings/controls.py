"""Controls built from a setting's entry: the label (with its mnemonic, the control as its
buddy), the accessible name and description, and the help line under the control."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from voxtray.choices import Choice
from voxtray.settings_schema import Spec


def plain(label: str) -> str:
    """A label without its mnemonic marker, as a screen reader should say it."""
    return label.replace("&", "")


def help_label(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName("help")
    label.setStyleSheet("QLabel#help { color: palette(placeholder-text); }")
    return label


def name(widget: QWidget, spec: Spec[object], text: str | None = None) -> None:
    widget.setAccessibleName(plain(text if text is not None else spec.label))
    widget.setAccessibleDescription(spec.help)
    widget.setToolTip(spec.help)


def add_row(form: QFormLayout, spec: Spec[object], control: QWidget, focus: QWidget) -> QLabel:
    """`control` (or a row holding it) under `spec`'s label, its help below it; `focus` is
    the widget the label's mnemonic moves to."""
    label = QLabel(spec.label)
    label.setBuddy(focus)
    name(focus, spec)
    column = QWidget()
    layout = QVBoxLayout(column)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    layout.addWidget(control)
    layout.addWidget(help_label(spec.help))
    form.addRow(label, column)
    return label


def add_check(form: QFormLayout, spec: Spec[object], checked: bool) -> QCheckBox:
    box = QCheckBox(spec.label)
    box.setChecked(checked)
    name(box, spec)
    column = QWidget()
    layout = QVBoxLayout(column)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    layout.addWidget(box)
    layout.addWidget(help_label(spec.help))
    form.addRow(column)
    return box


class ChoiceBox(QComboBox):
    """A choice setting: items read as their values (the names the CLI and settings.json
    use), each one's meaning in its tooltip and on the line below the box."""

    def __init__(self, spec: Spec[object], current: Choice, labels: bool = False) -> None:
        super().__init__()
        assert spec.choices is not None
        self.spec = spec
        self.kind = spec.choices
        for value in self.kind.values():
            meaning = spec.choice_help.get(value, "")
            self.addItem(meaning if labels else value, value)
            self.setItemData(self.count() - 1, meaning, 3)  # Qt.ToolTipRole
        self.setCurrentIndex(max(self.findData(current.value), 0))
        self.meaning = help_label("")
        self.currentIndexChanged.connect(self._explain)
        self._explain()

    def chosen(self) -> Choice:
        return self.kind(self.currentData())

    def _explain(self) -> None:
        value = str(self.currentData() or "")
        self.meaning.setText(f"{value}: {self.spec.choice_help.get(value, '')}")


def add_choice(
    form: QFormLayout, spec: Spec[object], current: Choice, labels: bool = False
) -> ChoiceBox:
    box = ChoiceBox(spec, current, labels)
    column = QWidget()
    layout = QVBoxLayout(column)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    layout.addWidget(box)
    if not labels:
        layout.addWidget(box.meaning)
    label = add_row(form, spec, column, box)
    label.setBuddy(box)
    return box


def spin_box(spec: Spec[object], value: float) -> QSpinBox | QDoubleSpinBox:
    low, top = spec.low, spec.top()
    assert low is not None
    assert top is not None
    box: QSpinBox | QDoubleSpinBox
    if spec.kind is int:
        box = QSpinBox()
        box.setRange(int(low), int(top))
        box.setValue(int(value))
    else:
        box = QDoubleSpinBox()
        box.setDecimals(1)
        box.setRange(low, top)
        box.setValue(value)
    if spec.unit:
        box.setSuffix(f" {spec.unit}")
    return box


def add_spin(form: QFormLayout, spec: Spec[object], value: float) -> QSpinBox | QDoubleSpinBox:
    box = spin_box(spec, value)
    add_row(form, spec, box, box)
    return box
