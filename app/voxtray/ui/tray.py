"""The tray icon and its menu, or, on desktops without a system tray, a small window with
the same controls."""

from __future__ import annotations

import enum
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSystemTrayIcon,
    QVBoxLayout,
    QWidget,
)

from voxtray.choices import DictationState
from voxtray.resources import resource_path

ICONS = resource_path("icons")

STATE_TEXT = {
    DictationState.LOADING: "loading model",
    DictationState.READY: "ready",
    DictationState.LISTENING: "listening",
    DictationState.TRANSCRIBING: "transcribing",
    DictationState.ERROR: "error",
}


class Notice(enum.Enum):
    """How a notice is marked: news, a problem Voxtray worked around, or a failure."""

    INFO = QSystemTrayIcon.MessageIcon.Information
    WARNING = QSystemTrayIcon.MessageIcon.Warning
    ERROR = QSystemTrayIcon.MessageIcon.Critical


STATE_ICON_FILE = {state: f"{state.value}.svg" for state in DictationState}
# The toggle action starts from ready and stops from listening; it waits in the others.
_TOGGLE_ENABLED = frozenset({DictationState.READY, DictationState.LISTENING})


def state_icon(state: DictationState) -> QIcon:
    return QIcon(str(ICONS / STATE_ICON_FILE[state]))


def state_icons() -> dict[DictationState, QIcon]:
    """One icon per state, to keep for a window's life: each new QIcon of an SVG leaves
    its rendered pixmaps in Qt's pixmap cache (up to 10 MB), and a dictation changes state
    three times."""
    return {state: state_icon(state) for state in DictationState}


def _toggle_text(state: DictationState) -> str:
    return "Stop &dictation" if state is DictationState.LISTENING else "Start &dictation"


class TrayMenu(QObject):
    """The actions both the tray menu and the fallback window offer."""

    toggle_requested = Signal()
    settings_requested = Signal()
    selftest_requested = Signal()
    history_requested = Signal()
    models_requested = Signal()
    setup_requested = Signal()
    hud_toggled = Signal(bool)
    hud_details_toggled = Signal(bool)
    recent_chosen = Signal(int)  # history id
    rerun_chosen = Signal(int)  # history id whose kept audio is transcribed again
    quit_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.menu = QMenu()
        self.toggle_action = self._action("Start &dictation", self.toggle_requested.emit)
        self.menu.addSeparator()
        self._action("&Settings…", self.settings_requested.emit)
        self._action("&GPU self-test…", self.selftest_requested.emit)
        self._action("&Models…", self.models_requested.emit)
        self._action("Set &up…", self.setup_requested.emit)
        self.hud_action = QAction("Show &HUD", self.menu)
        self.hud_action.setCheckable(True)
        self.hud_action.toggled.connect(self.hud_toggled.emit)
        self.menu.addAction(self.hud_action)
        self.hud_details_action = QAction("HUD de&tails (time per stage)", self.menu)
        self.hud_details_action.setCheckable(True)
        self.hud_details_action.toggled.connect(self.hud_details_toggled.emit)
        self.menu.addAction(self.hud_details_action)
        self._action("Hist&ory…", self.history_requested.emit)
        self.recent_menu = self.menu.addMenu("&Recent dictations")
        self.rerun_menu: QMenu | None = None
        self.recent_menu.setEnabled(False)
        self.menu.addSeparator()
        self._action("&Quit Voxtray", self.quit_requested.emit)

    def _action(self, text: str, slot: Callable[[], None]) -> QAction:
        action = QAction(text, self.menu)
        action.triggered.connect(lambda _checked=False: slot())
        self.menu.addAction(action)
        return action

    def set_state(self, state: DictationState) -> None:
        self.toggle_action.setText(_toggle_text(state))
        self.toggle_action.setEnabled(state in _TOGGLE_ENABLED)

    def set_recent(
        self, entries: list[tuple[int, str]], rerunnable: frozenset[int] = frozenset()
    ) -> None:
        """List ``entries`` (id, text) to copy; those in ``rerunnable`` (audio kept) also
        in a submenu that transcribes them again with the current model."""
        if self.rerun_menu is not None:  # clear() drops its action, not the menu itself
            self.rerun_menu.deleteLater()
            self.rerun_menu = None
        self.recent_menu.clear()
        for history_id, text in entries:
            action = self.recent_menu.addAction(_label(text))
            action.setToolTip("Copy to the clipboard")
            action.triggered.connect(
                lambda _checked=False, i=history_id: self.recent_chosen.emit(i)
            )
        again = [(i, text) for i, text in entries if i in rerunnable]
        if again:
            self.recent_menu.addSeparator()
            self.rerun_menu = rerun_menu = self.recent_menu.addMenu("Re-run with the current model")
            for history_id, text in again:
                action = rerun_menu.addAction(_label(text))
                action.triggered.connect(
                    lambda _checked=False, i=history_id: self.rerun_chosen.emit(i)
                )
        self.recent_menu.setEnabled(bool(entries))


def _label(text: str) -> str:
    return (text if len(text) <= 60 else text[:57] + "…") or "(empty)"


class FallbackWindow(QWidget):
    """Shown where the desktop has no system tray (e.g. GNOME without AppIndicator)."""

    def __init__(self, menu: TrayMenu, icons: dict[DictationState, QIcon]) -> None:
        super().__init__()
        self._icons = icons
        self.setWindowTitle("Voxtray")
        self.setWindowIcon(icons[DictationState.READY])
        self.state_label = QLabel("loading model")
        self.toggle_button = QPushButton("Start &dictation")
        self.toggle_button.clicked.connect(menu.toggle_requested.emit)
        more = QPushButton("&Menu")
        more.setMenu(menu.menu)
        row = QHBoxLayout()
        row.addWidget(self.toggle_button)
        row.addWidget(more)
        layout = QVBoxLayout(self)
        layout.addWidget(self.state_label)
        layout.addLayout(row)

    def set_state(self, state: DictationState, detail: str) -> None:
        self.state_label.setText(f"Voxtray: {STATE_TEXT[state]} {detail}".strip())
        self.toggle_button.setText(_toggle_text(state))
        self.toggle_button.setEnabled(state in _TOGGLE_ENABLED)
        self.setWindowIcon(self._icons[state])


class Tray:
    """The tray icon where there is a system tray, the fallback window otherwise."""

    def __init__(self, menu: TrayMenu, *, force_window: bool = False) -> None:
        self.menu = menu
        self.icons = state_icons()
        self.icon: QSystemTrayIcon | None = None
        self.window: FallbackWindow | None = None
        if QSystemTrayIcon.isSystemTrayAvailable() and not force_window:
            self.icon = QSystemTrayIcon(self.icons[DictationState.LOADING])
            self.icon.setContextMenu(menu.menu)
            self.icon.activated.connect(self._activated)
            self.icon.setToolTip("Voxtray: loading model")
            self.icon.show()
        else:
            self.window = FallbackWindow(menu, self.icons)
            self.window.show()

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.menu.toggle_requested.emit()

    def set_state(self, state: DictationState, detail: str = "") -> None:
        self.menu.set_state(state)
        text = f"Voxtray: {STATE_TEXT[state]}" + (f" ({detail})" if detail else "")
        if self.icon is not None:
            self.icon.setIcon(self.icons[state])
            self.icon.setToolTip(text)
        if self.window is not None:
            self.window.set_state(state, detail)

    def notify(self, title: str, message: str, kind: Notice = Notice.WARNING) -> None:
        if self.icon is not None and self.icon.supportsMessages():
            self.icon.showMessage(title, message, kind.value, 5000)
        elif self.window is not None:
            self.window.state_label.setText(f"{title}: {message}")

    def bring_forward(self) -> None:
        if self.window is not None:
            self.window.show()
            self.window.raise_()
            self.window.activateWindow()
        elif self.icon is not None:
            self.icon.showMessage("Voxtray", "Voxtray is running in the tray.")

    def hide(self) -> None:
        if self.icon is not None:
            self.icon.hide()
        if self.window is not None:
            self.window.close()
