"""The GPU self-test dialog: runs `run_selftest` in the background and shows the verdict,
the cause and the fix."""

from __future__ import annotations

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
from voxtray.inference.selftest import SelfTestReport, Verdict, run_selftest
from voxtray.models.store import InstalledModel
from voxtray.ui.background import Job, on_gui_thread, run_in_background
from voxtray.ui.install_words import reinstall_words
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


class SelfTestDialog(QDialog):
    """Pick a provider, run, read the verdict."""

    def __init__(
        self,
        model: InstalledModel,
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
        self._running: Job | None = None

    def start(self) -> None:
        self.run_button.setEnabled(False)
        self.details.setPlainText("")
        model, provider, gpu_index = self.model, self.provider.currentText(), self.gpu_index
        progress = on_gui_thread(self.show_progress)

        def run() -> SelfTestReport:
            return run_selftest(model, provider, gpu_index=gpu_index, progress=progress)

        self._running = run_in_background(run, self.show_report, "voxtray-selftest")

    def show_progress(self, message: str) -> None:
        self.say(f"{message}…")

    def say(self, text: str) -> None:
        self.verdict.setText(text)

    def show_report(self, report: SelfTestReport | Exception) -> None:
        self.run_button.setEnabled(True)
        if isinstance(report, Exception):
            self.say(f"<b>The self-test could not run:</b> {plain(str(report))}")
            return
        self.report = report
        color = VERDICT_COLORS[report.verdict]
        self.say(f"<b style='color:{color}'>{report.verdict.value}</b>: {report.summary}")
        self.details.setPlainText(report.text_report(reinstall_words))

    def done(self, result: int) -> None:
        if self._running is not None:
            self._running.wait(60)
        super().done(result)
