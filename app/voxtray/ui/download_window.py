"""A model install the app started itself (the first start, or a switch to a model not yet
installed), shown as a real progress bar with speed and time left rather than a clipped HUD
line: inside the set-up window while it is open, in a small window of its own otherwise."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from voxtray.models.progress import InstallProgress, InstallStep
from voxtray.ui.model_picker import StageRate

_PERMILLE = 1000  # the bar counts in thousandths: QProgressBar's int overflows at 2 GB


class DownloadProgress(QWidget):
    """What is being fetched or built, a bar, and the download's speed and time left."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.stage = QLabel("")
        self.stage.setAccessibleName("Model install step")
        self.stage.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setAccessibleName("Model install progress")
        self.bar.setRange(0, _PERMILLE)
        self.rate = QLabel("")
        self.rate.setAccessibleName("Download speed and time left")
        for label in (self.stage, self.rate):
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByKeyboard)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        for widget in (self.stage, self.bar, self.rate):
            box.addWidget(widget)
        self._rate = StageRate()

    def show_progress(self, progress: InstallProgress) -> None:
        """Without a total, the bar only shows that work goes on."""
        rate = self._rate.text(progress)
        stage = progress.said()
        self.stage.setText(stage[:1].upper() + stage[1:])
        total = progress.total
        if total is not None and total > 0:
            self.bar.setRange(0, _PERMILLE)
            self.bar.setValue(min(_PERMILLE, progress.done * _PERMILLE // total))
        else:
            self.bar.setRange(0, 0)
        self.rate.setText(rate if progress.step is InstallStep.DOWNLOADING else "")


class DownloadWindow(QWidget):
    """The install's progress on its own; Hide leaves the install running (the tray and the
    HUD still show it), and the window closes itself when the model is ready."""

    def __init__(self, model: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Voxtray: getting the speech model")
        intro = QLabel(
            f"Voxtray is getting {model} and the voice detector. This happens once; "
            "dictation starts when they are ready."
        )
        intro.setWordWrap(True)
        self.progress = DownloadProgress()
        hide = QPushButton("&Hide")
        hide.setAccessibleName("Hide this window")
        hide.clicked.connect(self.hide)
        box = QVBoxLayout(self)
        box.addWidget(intro)
        box.addWidget(self.progress)
        box.addWidget(hide, 0, Qt.AlignmentFlag.AlignRight)
        self.resize(480, 160)
