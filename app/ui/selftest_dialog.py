"""The GPU self-test dialog: what really runs, and why a GPU is or is not used."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPlainTextEdit, QVBoxLayout, QWidget


def provider_report(loaded: Any) -> str:
    """Facts about the providers, from the loaded model and the machine."""
    import onnxruntime

    from app.gpu.nvml import gpu_memory, unavailable_reason
    from app.inference.providers import nvidia_driver_present

    lines = []
    if loaded is not None:
        lines.append(f"Model {loaded.model} ({loaded.precision}) on the {loaded.engine} engine")
        lines.append(f"Provider really in use: {loaded.provider}")
    lines.append(f"onnxruntime {onnxruntime.__version__}, device build: {onnxruntime.get_device()}")
    lines.append("Providers compiled in: " + ", ".join(onnxruntime.get_available_providers()))
    lines.append(f"NVIDIA kernel driver loaded: {'yes' if nvidia_driver_present() else 'no'}")
    memory = gpu_memory(0)
    if memory is None:
        lines.append(f"GPU: none usable ({unavailable_reason()})")
    else:
        lines.append(f"GPU 0: {memory.name}, {memory.total_mb:.0f} MiB")
        lines.append(f"This process uses {memory.process_mb:.0f} MiB of it")
    return "\n".join(lines)


class SelfTestDialog(QDialog):
    def __init__(self, report: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Voxtray GPU self-test")
        text = QPlainTextEdit(report)
        text.setReadOnly(True)
        text.setMinimumSize(560, 220)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(buttons)
