"""The model row of the settings window: the catalog sorted with installed models marked,
Install (asking first where the catalog pins no hash), Cancel of a running download (it
resumes next time), Remove, and refusals (free space, a changed download) in plain words."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from voxtray.errors import CancelledError, VoxtrayError
from voxtray.models.limits import CancelToken
from voxtray.models.listing import ModelRow, languages_label, model_rows
from voxtray.models.progress import InstallProgress, InstallStep
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.ui.background import Job, on_gui_thread, run_in_background
from voxtray.ui.plain_words import plain

Ask = Callable[[QWidget, str, str, str], bool]
"""(parent, title, text, yes-button label) -> the user said yes."""
Tell = Callable[[QWidget, str, str], None]


def ask_with_dialog(parent: QWidget, title: str, text: str, yes: str) -> bool:
    box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
    accept = box.addButton(yes, QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is accept


def tell_with_dialog(parent: QWidget, title: str, text: str) -> None:
    QMessageBox.warning(parent, title, text)


def rate_text(done: int, total: int, seconds: float) -> str:
    """ "12.3 MB/s · about 20 s left" for `done` of `total` bytes in `seconds`."""
    if seconds <= 0.5 or done <= 0:
        return ""
    speed = done / seconds
    text = f"{speed / 1e6:.1f} MB/s"
    if total > done:
        left = (total - done) / speed
        text += f" · about {left:.0f} s left" if left < 90 else f" · about {left / 60:.0f} min left"
    return text


class StageRate:
    """The speed and time left of an install's current stage, timed from the stage's first
    report: speed is per stage, and a conversion is not a download."""

    def __init__(self) -> None:
        self.stage: tuple[InstallStep, str] | None = None
        self.began = time.monotonic()

    def text(self, progress: InstallProgress) -> str:
        stage = (progress.step, progress.detail)
        if stage != self.stage:
            self.stage, self.began = stage, time.monotonic()
        total = -1 if progress.total is None else progress.total
        return rate_text(progress.done, total, time.monotonic() - self.began)


def row_label(row: ModelRow) -> str:
    mark = "✓ " if row.installed else ""
    facts = [f"{row.size_mb:.0f} MB", languages_label(row.languages), row.license]
    if row.streaming:
        facts.append("streaming")
    return f"{mark}{row.title} ({', '.join(facts)})"


class ModelPicker(QWidget):
    """Choose, install, cancel and remove speech models. `active` is the model the app
    runs now, which Remove refuses to delete."""

    installed = Signal(str)
    removed = Signal(str)
    install_done = Signal(str)  # "" on success, else the message shown

    def __init__(
        self, store: ModelStore, current: str, active: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.active = active
        self.ask: Ask = ask_with_dialog
        self.tell: Tell = tell_with_dialog
        self._consented: set[str] = set()
        self._token: CancelToken | None = None
        self._installing: Job | None = None
        self._name = ""  # the model being installed
        self._rate = StageRate()
        self.combo = QComboBox()
        self.install_button = QPushButton("&Install")
        self.cancel_button = QPushButton("Cancel &download")
        self.remove_button = QPushButton("Remo&ve")
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Install progress")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self._layout()
        self.refresh(current)
        self._forget_status()
        self.combo.currentIndexChanged.connect(self._update_buttons)
        self.combo.currentIndexChanged.connect(self._forget_status)
        self.install_button.clicked.connect(self.install_selected)
        self.cancel_button.clicked.connect(self.cancel)
        self.remove_button.clicked.connect(self.remove_selected)

    def _layout(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(self.combo, 1)
        for button in (self.install_button, self.cancel_button, self.remove_button):
            top.addWidget(button)
        outer.addLayout(top)
        outer.addWidget(self.progress)
        outer.addWidget(self.status)
        self.progress.setVisible(False)
        self.cancel_button.setVisible(False)

    # --- state -------------------------------------------------------------------------

    def selected(self) -> str:
        return str(self.combo.currentData() or "")

    def refresh(self, select: str | None = None) -> None:
        """Re-read the catalog and the store; keep (or set) the selection."""
        keep = select if select is not None else self.selected()
        self.rows = {r.name: r for r in model_rows(self.store) if r.family != "silero-vad"}
        self.combo.blockSignals(True)
        self.combo.clear()
        for row in self.rows.values():
            self.combo.addItem(row_label(row), row.name)
            self.combo.setItemData(self.combo.count() - 1, row.description, 3)  # tooltip
        self.combo.setCurrentIndex(max(self.combo.findData(keep), 0))
        self.combo.blockSignals(False)
        self._update_buttons()

    @property
    def busy(self) -> bool:
        return self._installing is not None

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def _forget_status(self) -> None:
        if not self.busy:  # a message about another model would be stale
            self._say(self._describe(self.selected()))

    def _describe(self, name: str) -> str:
        row = self.rows.get(name)
        if row is None or row.installed:
            return ""
        size = f"{row.download_mb:.0f} MB" if row.download_mb else f"{row.size_mb:.0f} MB"
        return f"Not installed: Install downloads about {size}."

    def _update_buttons(self) -> None:
        row = self.rows.get(self.selected())
        installed = row is not None and row.installed
        self.install_button.setEnabled(not self.busy and row is not None and not installed)
        self.remove_button.setEnabled(not self.busy and installed)
        self.combo.setEnabled(not self.busy)
        self.cancel_button.setVisible(self.busy)
        self.progress.setVisible(self.busy)

    # --- actions -----------------------------------------------------------------------

    def install_selected(self) -> None:
        name = self.selected()
        if not name or self.busy:
            return
        if self.store.needs_consent(name) and name not in self._consented:
            if not self.ask(self, "No pinned hash", self._consent_text(name), "Install anyway"):
                self._say(f"{name} was not installed.")
                return
            self._consented.add(name)
        self._start(name)

    def _consent_text(self, name: str) -> str:
        row = self.rows[name]
        size = f"about {row.download_mb:.0f} MB" if row.download_mb else f"{row.size_mb:.0f} MB"
        return (
            f"{row.title} ({size}) downloads from a release whose checksum Voxtray's catalog "
            "does not pin, so it cannot prove the files are the publisher's.\n\n"
            "If you install it anyway, Voxtray records the checksum of what arrives and "
            "refuses the download if it ever changes."
        )

    def _start(self, name: str) -> None:
        token = self._token = CancelToken()
        consented = name in self._consented
        progress = on_gui_thread(self._show_progress)

        def install() -> InstalledModel:
            return self.store.install(
                name, allow_unpinned=consented, cancel=token, progress=progress
            )

        self._name = name
        self._rate = StageRate()
        self._say(f"Installing {name}…")
        self.progress.setRange(0, 0)
        self._installing = run_in_background(install, self._finished, "voxtray-install")
        self._update_buttons()

    def shutdown(self, timeout_ms: int = 30_000) -> None:
        """Stop a running install (its partial download is kept) before the widget goes."""
        if self._installing is None:
            return
        self.cancel()
        self._installing.wait(timeout_ms / 1000)

    def cancel(self) -> None:
        if self._token is not None:
            self._token.cancel()
            self._say("Cancelling…")

    def _show_progress(self, progress: InstallProgress) -> None:
        done, total = progress.done, -1 if progress.total is None else progress.total
        timed = self._rate.text(progress)
        stage = progress.said()
        self.progress.setFormat(f"{stage} %p%")
        self.progress.setRange(0, max(total, 0))
        self.progress.setValue(min(done, total) if total > 0 else 0)
        rate = timed if total > 0 else ""
        self._say(f"Installing {self._name}: {stage}" + (f" · {rate}" if rate else "") + "…")

    def _finished(self, result: InstalledModel | Exception) -> None:
        name = self._name
        self._installing = self._token = None
        error = str(result) if isinstance(result, Exception) else ""
        self.refresh()
        if isinstance(result, CancelledError):
            self._say(f"{name}: download cancelled; Install resumes where it stopped.")
        elif error:
            said = plain(error)
            self._say(f"{name} was not installed: {said}")
            self.tell(self, "Voxtray", said)
        else:
            self._say(f"{name} is installed.")
            self.installed.emit(name)
        self.install_done.emit(error)

    def remove_selected(self) -> None:
        name = self.selected()
        if not name or self.busy:
            return
        if name == self.active:
            self.tell(self, "Voxtray", f"{name} is in use; choose and save another model first.")
            return
        text = f"Delete {name} from {self.store.path(name)}?"
        if not self.ask(self, "Remove model", text, "Remove"):
            return
        try:
            self.store.remove(name)
        except VoxtrayError as exc:
            self.tell(self, "Voxtray", str(exc))
            return
        self.refresh()
        self._say(f"{name} was removed.")
        self.removed.emit(name)
