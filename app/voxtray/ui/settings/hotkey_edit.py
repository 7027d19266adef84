"""The hotkey field: type a combination, or press Capture and then the keys."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFocusEvent, QKeyEvent
from PySide6.QtWidgets import QLineEdit

_QT_MODIFIERS = (
    (Qt.KeyboardModifier.ControlModifier, "ctrl"),
    (Qt.KeyboardModifier.AltModifier, "alt"),
    (Qt.KeyboardModifier.ShiftModifier, "shift"),
    (Qt.KeyboardModifier.MetaModifier, "super"),
)
_MODIFIER_KEYS = {
    Qt.Key.Key_Control,
    Qt.Key.Key_Alt,
    Qt.Key.Key_Shift,
    Qt.Key.Key_Meta,
    Qt.Key.Key_Super_L,
    Qt.Key.Key_Super_R,
}


def hotkey_from_event(event: QKeyEvent) -> str | None:
    """ "ctrl+alt+space" from a key press; None while only modifiers are down."""
    if Qt.Key(event.key()) in _MODIFIER_KEYS:
        return None
    parts = [name for flag, name in _QT_MODIFIERS if event.modifiers() & flag]
    key = Qt.Key(event.key()).name.removeprefix("Key_").lower()
    return "+".join([*parts, key])


class HotkeyEdit(QLineEdit):
    """While capturing, the next combination becomes the text; Esc (alone) or leaving the
    field cancels and puts the previous hotkey back."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.setPlaceholderText("press the keys…")
        self.capturing = False
        self._before = text

    def start_capture(self) -> None:
        self._before = self.text()
        self.capturing = True
        self.setText("")
        self.setPlaceholderText("press the keys now (Esc cancels)…")
        self.setFocus()

    def cancel_capture(self) -> None:
        if self.capturing:
            self.capturing = False
            self.setText(self._before)
            self.setPlaceholderText("press the keys…")

    def event(self, event: object) -> bool:
        # Tab would move the focus before keyPressEvent sees it; while capturing, it is a key.
        if (
            self.capturing
            and isinstance(event, QKeyEvent)
            and event.type() == QKeyEvent.Type.KeyPress
            and Qt.Key(event.key()) in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab)
        ):
            self.keyPressEvent(event)
            return True
        return super().event(event)  # type: ignore[arg-type]

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if not self.capturing:
            super().keyPressEvent(event)
            return
        event.accept()
        if Qt.Key(event.key()) == Qt.Key.Key_Escape and not event.modifiers():
            self.cancel_capture()
            return
        combo = hotkey_from_event(event)
        if combo is not None:
            self.setText(combo)
            self.capturing = False
            self.setPlaceholderText("press the keys…")

    def focusOutEvent(self, event: QFocusEvent) -> None:
        self.cancel_capture()
        super().focusOutEvent(event)
