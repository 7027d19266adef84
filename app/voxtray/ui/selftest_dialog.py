"""The GPU self-test dialog: runs `run_selftest` on a thread and shows the verdict, the cause
and the fix."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from voxtray.choices import Provider
from voxtray.errors import VoxtrayError
from voxtray.gpu.selftest import SelfTestReport, Verdict, run_selftest
from voxtray.ui.plain_words import plain

VERDICT_COLORS = {
    Verdict.GPU_OK: "#2e7d32",
    Verdict.CPU_OK: "#2e7d32",
    Verdict.GPU_SLOWER: "#ef6c00",
    Verdict.CPU_FALLBACK: "#c62828",
    Verdict.OTHER_GPU_PROVIDER: "#ef6c00",
    Verdict.NO_GPU: "#6d4c41",
    Verdict.BROKEN_MODEL: "#c62828",
    Verdict.GPU_FAILED: "#c62828",
}


class SelfTestRunner(QObject):
    progress = Signal(str)
    finished = Signal(object)  # SelfTestReport, or str for an error

    def __init__(self, model: Any, provider: str, gpu_index: int) -> None:
        super().__init__()
        self.model, self.provider, self.gpu_index = model, provider, gpu_index

    @Slot()
    def run(self) -> None:
        try:
            report = run_selftest(
                self.model, self.provider, gpu_index=self.gpu_index, progress=self.progress.emit
            )
            self.finished.emit(report)
        except VoxtrayError as exc:
            self.finished.emit(str(exc))


class SelfTestDialog(QDialog):
    """Pick a provider, run, read the verdict."""

    def __init__(
        self,
        model: Any,
        provider: str = Provider.CUDA,
        gpu_index: int = 0,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Voxtray GPU self-test")
        self.model, self.gpu_index = model, gpu_index
        self.provider = QComboBox()
        self.provider.addItems([Provider.CUDA, Provider.TENSORRT, Provider.CPU, Provider.AUTO])
        self.provider.setCurrentText(provider if provider != Provider.AUTO else Provider.CUDA)
        self.provider.setAccessibleName("Provider to test")
        self.run_button = QPushButton("&Run self-test")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.start)
        provider_label = QLabel("&Provider")
        provider_label.setBuddy(self.provider)
        row = QHBoxLayout()
        row.addWidget(provider_label)
        row.addWidget(self.provider)
        row.addWidget(QLabel(f"graphics card {gpu_index}"))
        row.addWidget(self.run_button)
        self.verdict = QLabel("Transcribes a real clip on the processor and on the provider.")
        self.verdict.setWordWrap(True)
        self.verdict.setAccessibleName("Self-test verdict")
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setTabChangesFocus(True)
        self.details.setAccessibleName("Self-test report")
        self.details.setMinimumSize(480, 220)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.verdict)
        report_label = QLabel("R&eport")
        report_label.setBuddy(self.details)
        layout.addWidget(report_label)
        layout.addWidget(self.details)
        layout.addWidget(buttons)
        self.report: SelfTestReport | None = None
        self._thread: QThread | None = None

    def start(self) -> None:
        self.run_button.setEnabled(False)
        self.details.setPlainText("")
        thread = QThread(self)
        runner = SelfTestRunner(self.model, self.provider.currentText(), self.gpu_index)
        runner.moveToThread(thread)
        thread.started.connect(runner.run)
        runner.progress.connect(self.show_progress)
        runner.finished.connect(self.show_report)
        runner.finished.connect(thread.quit)
        self._thread, self._runner = thread, runner
        thread.start()

    @Slot(str)
    def show_progress(self, message: str) -> None:
        # A slot of this window, so Qt runs it on the GUI thread (a lambda would run on
        # the runner's thread).
        self.say(f"{message}…")

    def say(self, text: str) -> None:
        self.verdict.setText(text)

    @Slot(object)
    def show_report(self, report: Any) -> None:
        self.run_button.setEnabled(True)
        if isinstance(report, str):
            self.say(f"<b>The self-test could not run:</b> {plain(report)}")
            return
        self.report = report
        color = VERDICT_COLORS[report.verdict]
        self.say(f"<b style='color:{color}'>{report.verdict.value}</b>: {report.summary}")
        self.details.setPlainText(report.text_report())

    def done(self, result: int) -> None:
        if self._thread is not None:
            self._thread.quit()
            self._thread.wait(60_000)
        super().done(result)
