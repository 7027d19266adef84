"""The HUD: a small always-on-top overlay that never takes focus, so typed text still lands
in the user's window. It shows the state, the last utterance's latency by stage, RTF, the
provider really in use, the model and the last utterance's language, GPU memory and a
sparkline of recent latencies."""

from __future__ import annotations

import html
from collections import deque

from PySide6.QtCore import QPointF, Qt, QTimer
from PySide6.QtGui import QColor, QGuiApplication, QPainter, QPaintEvent, QPen, QPolygonF
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from voxtray.choices import DictationState
from voxtray.dictation.utterance import Utterance
from voxtray.gpu.nvml import gpu_memory, index_problem
from voxtray.ui.platform import hud_window_flags

STATE_COLORS = {
    DictationState.LOADING: "#90a4ae",
    DictationState.READY: "#66bb6a",
    DictationState.LISTENING: "#ef5350",
    DictationState.TRANSCRIBING: "#ffa726",
    DictationState.ERROR: "#ce93d8",
}


def _remote_stages(timings: dict[str, float]) -> str:
    """A line of a remote engine's stages: the network, the server's queue and its STT."""
    if "stt_remote" not in timings:
        return ""
    line = f"\nremote {timings['stt_remote']:.0f}"
    if "stt_network" in timings:
        line += (
            f" = network {timings['stt_network']:.0f} · queue "
            f"{timings.get('stt_server_queue', 0):.0f} · server stt "
            f"{timings.get('stt_server_inference', 0):.0f}"
        )
    return line + " ms"


class Sparkline(QWidget):
    """Recent end-to-end latencies, newest on the right."""

    def __init__(self, capacity: int = 30) -> None:
        super().__init__()
        self.values: deque[float] = deque(maxlen=capacity)
        self.setFixedHeight(28)

    def add(self, value: float) -> None:
        self.values.append(value)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        if len(self.values) < 2:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor("#4fc3f7"), 1.5))
        top = max(self.values) or 1.0
        step = self.width() / (self.values.maxlen or 1)
        start = self.width() - step * (len(self.values) - 1)
        points = [
            QPointF(start + i * step, self.height() - 2 - (self.height() - 4) * value / top)
            for i, value in enumerate(self.values)
        ]
        painter.drawPolyline(QPolygonF(points))
        painter.end()


class Hud(QWidget):
    """Frameless, translucent, on top of everything, and never focused."""

    def __init__(self, gpu_index: int = 0) -> None:
        super().__init__(None, hud_window_flags())
        self.setObjectName("VoxtrayHud")
        self.setWindowTitle("Voxtray HUD")
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setStyleSheet(
            "QWidget#VoxtrayHud { background: rgba(20, 24, 28, 225); border-radius: 8px; }"
            "QLabel { color: #eceff1; font: 10pt monospace; }"
        )
        self.gpu_index = gpu_index
        self._device = ""
        self.state_label = QLabel("loading")
        self.partial_label = QLabel("")
        self.partial_label.setWordWrap(True)
        self.partial_label.setTextFormat(Qt.TextFormat.RichText)
        self.partial_label.hide()
        self.latency_label = QLabel("no dictation yet")
        self.engine_label = QLabel("")
        self.gpu_label = QLabel("")
        self.sparkline = Sparkline()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        for widget in (
            self.state_label,
            self.partial_label,
            self.latency_label,
            self.engine_label,
            self.gpu_label,
            self.sparkline,
        ):
            layout.addWidget(widget)
        self.setFixedWidth(360)
        self._gpu_timer = QTimer(self)
        self._gpu_timer.timeout.connect(self.refresh_gpu)
        self._gpu_timer.start(1000)
        self.refresh_gpu()

    def place(self) -> None:
        """Bottom-right corner of the primary screen."""
        screen = QGuiApplication.primaryScreen()
        if screen is None:
            return
        area = screen.availableGeometry()
        self.adjustSize()
        self.move(area.right() - self.width() - 16, area.bottom() - self.height() - 16)

    def show_partial(self, committed: str, tentative: str) -> None:
        """Live text while listening: committed words plain, the guess after them dimmed."""
        shown = html.escape(committed[-300:])
        if tentative:
            shown += f" <span style='color:#90a4ae'>{html.escape(tentative[-200:])}</span>"
        self.partial_label.setText(shown.strip())
        self.partial_label.setVisible(bool(committed or tentative))

    def set_state(self, state: DictationState, detail: str = "") -> None:
        if state is not DictationState.LISTENING:
            self.show_partial("", "")
        color = STATE_COLORS[state]
        suffix = f" · {detail}" if detail else ""
        self.state_label.setText(f"<b style='color:{color}'>● {state.value}</b>{suffix}")

    def set_engine(
        self, model: str, engine: str, provider: str, device: str = "", language: str = ""
    ) -> None:
        where = f" ({device})" if device else ""
        shown = f"{model} · {language}" if language else model
        self.engine_label.setText(f"{shown} · {engine} · provider {provider}{where}")
        self._device = device

    def show_utterance(self, utterance: Utterance) -> None:
        t = utterance.timings_ms
        self.latency_label.setText(
            f"mic {t.get('mic_start', 0):.0f} · vad {t.get('vad', 0):.0f} · "
            f"stt {t.get('stt', 0):.0f} · type {t.get('delivery', 0):.0f} ms\n"
            f"release→text {t.get('release_to_text', 0):.0f} ms · RTF {t.get('rtf', 0):.3f}"
            + _remote_stages(t)
        )
        record = utterance.record
        if record.provider:  # a remote engine may have fallen back since loading
            remote = record.provider.startswith("remote:")
            device = self._device if remote else ""
            self.set_engine(
                record.model, record.engine, record.provider, device, record.language or ""
            )
        self.sparkline.add(t.get("total", 0.0))

    def refresh_gpu(self) -> None:
        memory = gpu_memory(self.gpu_index)
        if memory is None:
            self.gpu_label.setText(f"GPU: {index_problem(self.gpu_index) or 'no GPU'}")
        else:
            self.gpu_label.setText(
                f"GPU {memory.index} {memory.name}: this app {memory.process_mb:.0f} MiB "
                f"of {memory.total_mb:.0f} MiB"
            )
