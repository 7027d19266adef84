"""Labels the windows share."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel


def selectable_text(words: str) -> QLabel:
    """Wrapped words a keyboard user can select and a screen reader can step through."""
    label = QLabel(words)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByKeyboard)
    return label
