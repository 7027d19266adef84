"""The HUD: a small always-on-top overlay that never takes focus, so typed text still lands
in the user's window. It shows the state, the microphone level, the live text, and one line
of where the last dictation ran and how fast; the tray menu's HUD details add the latency
by stage, RTF, the provider really in use, the model and language, GPU memory and a
sparkline of latencies."""

from __future__ import annotations

import html
from collections import deque
from collections.abc import Callable

from PySide6.QtCore import QPointF, QRect, Qt, QTimer
from PySide6.QtGui import (
    QColor,
    QGuiApplication,
    QPainter,
    QPaintEvent,
    QPen,
    QPolygonF,
)
from PySide6.QtWidgets import QFrame, QLabel, QProgressBar, QScrollArea, QVBoxLayout, QWidget

from voxtray.choices import DictationState
from voxtray.dictation.utterance import Utterance
from voxtray.gpu.nvml import GpuMemory, gpu_memory, index_problem
from voxtray.ui.platform import hud_window_flags

LevelSource = Callable[[], float | None]
"""The microphone's level in dBFS now, or None while none is open."""

STATE_COLORS = {
    DictationState.LOADING: "#90a4ae",
    DictationState.READY: "#66bb6a",
    DictationState.LISTENING: "#ef5350",
    DictationState.TRANSCRIBING: "#ffa726",
    DictationState.ERROR: "#ce93d8",
}


def _cleanup_stage(timings: dict[str, float], refused: str | None) -> str:
    """AI clean-up as its own stage: what the dictation waited for it, and why the text
    was typed as recognised when it was."""
    if "cleanup" not in timings:
        return ""
    line = f"\nclean-up {timings['cleanup']:.0f} ms"
    if "cleanup_round_trip" in timings:
        line += f" (server {timings['cleanup_round_trip']:.0f} · guard "
        line += f"{timings.get('cleanup_guard', 0):.1f})"
    return line + (f"\n{refused}" if refused else "")


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
    """Frameless, translucent, on top of everything, and never focused.

    It shows the state (errors and progress whole), the microphone's level while listening,
    the live text wrapped in full (scrolled to its end once it outgrows the screen), and one
    line of how the last dictation went. It lets clicks through (it must never take the
    input), so the per-stage breakdown is the tray menu's HUD details.
    """

    WIDTH = 420
    MARGIN = 16

    def __init__(self, gpu_index: int = 0, level_source: LevelSource | None = None) -> None:
        super().__init__(None, hud_window_flags())
        self.setObjectName("VoxtrayHud")
        self.setWindowTitle("Voxtray HUD")
        self.setAccessibleName("Voxtray HUD")
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setStyleSheet(
            "QWidget#VoxtrayHud { background: rgba(20, 24, 28, 235); border-radius: 8px; }"
            "QLabel { color: #eceff1; font: 10pt sans-serif; }"
            "QLabel#details { color: #b0bec5; font: 9pt monospace; }"
            "QScrollArea, QScrollArea > QWidget > QWidget { background: transparent; }"
            "QProgressBar { background: #37474f; border: none; border-radius: 2px; }"
            "QScrollBar:vertical { background: transparent; width: 6px; border: none; }"
            "QScrollBar::handle:vertical { background: #607d8b; border-radius: 3px; }"
            "QScrollBar::add-line, QScrollBar::sub-line { height: 0; }"
            "QProgressBar::chunk { background: #66bb6a; border-radius: 2px; }"
        )
        self.gpu_index = gpu_index
        self.level_source = level_source
        self._device = ""
        self._provider = ""
        self._fallback = ""  # why the model does not run where it was asked to
        self._release_ms: float | None = None
        self._state = DictationState.LOADING
        self._memory: GpuMemory | None = None
        self.state_label = self._label("loading")
        self.state_label.setAccessibleName("Voxtray state")
        self.level = QProgressBar()
        self.level.setRange(-60, 0)
        self.level.setTextVisible(False)
        self.level.setFixedHeight(5)
        self.level.setAccessibleName("Microphone level")
        self.level.hide()
        self.partial_label = self._label("")
        self.partial_label.setTextFormat(Qt.TextFormat.RichText)
        self.partial_scroll = QScrollArea()
        self.partial_scroll.setWidget(self.partial_label)
        self.partial_scroll.setWidgetResizable(True)
        self.partial_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.partial_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.partial_scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.partial_scroll.hide()
        follow = self.partial_scroll.verticalScrollBar()
        follow.rangeChanged.connect(lambda _low, high: follow.setValue(high))  # newest words
        self.summary_label = self._label("no dictation yet")
        self.summary_label.setAccessibleName("Last dictation")
        self.latency_label = self._label("no dictation yet", "details")
        self.engine_label = self._label("", "details")
        self.gpu_label = self._label("", "details")
        self.sparkline = Sparkline()
        self.details = QWidget()
        details = QVBoxLayout(self.details)
        details.setContentsMargins(0, 4, 0, 0)
        parts: tuple[QWidget, ...] = (
            self.latency_label, self.engine_label, self.gpu_label, self.sparkline,
        )  # fmt: skip
        for part in parts:
            details.addWidget(part)
        self.details.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        for widget in (
            self.state_label, self.level, self.partial_scroll, self.summary_label, self.details,
        ):  # fmt: skip
            layout.addWidget(widget)
        self.setFixedWidth(self.WIDTH)
        self._gpu_timer = QTimer(self)
        self._gpu_timer.timeout.connect(self.refresh_gpu)
        self._gpu_timer.start(1000)
        self._level_timer = QTimer(self)
        self._level_timer.timeout.connect(self._update_level)
        self._level_timer.start(100)
        self.refresh_gpu()

    @staticmethod
    def _label(text: str, name: str = "") -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        if name:
            label.setObjectName(name)
        return label

    # --- size and place ------------------------------------------------------------------

    def _area(self) -> QRect | None:
        screen = self.screen() or QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else None

    def place(self) -> None:
        """Bottom-right corner of the screen, never larger than its free area: live text
        beyond that scrolls, its end in view."""
        area = self._area()
        if area is None:
            return
        width = min(self.WIDTH, area.width() - 2 * self.MARGIN)
        self.setFixedWidth(width)
        room = area.height() - 2 * self.MARGIN
        if self.partial_scroll.isVisible():
            # The text's own height at this width, then less if the whole would not fit.
            inner = width - 20 - self.partial_scroll.verticalScrollBar().sizeHint().width()
            needed = self.partial_label.heightForWidth(inner)
            self.partial_scroll.setFixedHeight(needed)
            layout = self.layout()
            if layout is not None:
                layout.activate()
            over = self.sizeHint().height() - room
            # At most a third of the screen: the HUD must not hide what is being typed into.
            cap = min(needed - max(over, 0), room // 3)
            if cap < needed:
                self.partial_scroll.setFixedHeight(max(40, cap))
        self.setMaximumHeight(room)
        self.adjustSize()
        bar = self.partial_scroll.verticalScrollBar()
        bar.setValue(bar.maximum())
        self.move(
            area.right() - self.width() - self.MARGIN, area.bottom() - self.height() - self.MARGIN
        )

    def _relayout(self) -> None:
        if self.isVisible():
            self.place()

    def set_details(self, shown: bool) -> None:
        """Show or hide the per-stage breakdown (the tray menu's HUD details)."""
        self.details.setVisible(shown)
        self._relayout()

    # --- what it shows -------------------------------------------------------------------

    def show_partial(self, committed: str, tentative: str) -> None:
        """Live text while listening: committed words plain, the guess after them dimmed."""
        shown = html.escape(committed)
        if tentative:
            shown += f" <span style='color:#90a4ae'>{html.escape(tentative)}</span>"
        self.partial_label.setText(shown.strip())
        visible = bool(committed or tentative)
        self.partial_label.setVisible(visible)
        self.partial_scroll.setVisible(visible)
        self._relayout()

    def set_state(self, state: DictationState, detail: str = "") -> None:
        if state is not DictationState.LISTENING:
            self.show_partial("", "")
        self._state = state
        color = STATE_COLORS[state]
        suffix = f" · {html.escape(detail)}" if detail else ""
        self.state_label.setText(f"<b style='color:{color}'>● {state.value}</b>{suffix}")
        self.level.setVisible(state is DictationState.LISTENING and self.level_source is not None)
        # In an error the last dictation's line would describe a model that is not running.
        self.summary_label.setVisible(state is not DictationState.ERROR)
        self._relayout()

    def set_engine(
        self,
        model: str,
        engine: str,
        provider: str,
        device: str = "",
        language: str = "",
        fallback: str = "",
    ) -> None:
        where = f" ({device})" if device else ""
        shown = f"{model} · {language}" if language else model
        why = f"\n{fallback}" if fallback else ""
        self.engine_label.setText(f"{shown} · {engine} · provider {provider}{where}{why}")
        self._device = device
        self._provider = provider
        self._fallback = fallback
        self._summarise()

    def show_utterance(self, utterance: Utterance) -> None:
        t = utterance.timings_ms
        self.latency_label.setText(
            f"mic {t.get('mic_start', 0):.0f} · vad {t.get('vad', 0):.0f} · "
            f"stt {t.get('stt', 0):.0f} · type {t.get('delivery', 0):.0f} ms\n"
            f"release→text {t.get('release_to_text', 0):.0f} ms · RTF {t.get('rtf', 0):.3f}"
            + _remote_stages(t)
            + _cleanup_stage(t, utterance.cleanup)
            + (f"\nmode {utterance.mode}" if utterance.mode else "")
            + (f"\n{utterance.output}" if utterance.output else "")
        )
        self._release_ms = t.get("release_to_text")
        record = utterance.record
        if record.provider:  # a remote engine may have fallen back since loading
            remote = record.provider.startswith("remote:")
            device = self._device if remote else ""
            self.set_engine(
                record.model,
                record.engine,
                record.provider,
                device,
                record.language or "",
                record.fallback or "",
            )
        self.sparkline.add(t.get("total", 0.0))
        self._summarise()

    def refresh_gpu(self) -> None:
        memory = gpu_memory(self.gpu_index)
        if memory is None:
            self.gpu_label.setText(f"GPU: {index_problem(self.gpu_index) or 'no GPU'}")
        else:
            self.gpu_label.setText(
                f"GPU {memory.index} {memory.name}: this app {memory.process_mb:.0f} MiB "
                f"of {memory.total_mb:.0f} MiB"
            )
        self._memory = memory
        self._summarise()

    def _summarise(self) -> None:
        self.summary_label.setText(
            summary_line(
                self._release_ms, self._provider, self._device, self._memory, self._fallback
            )
        )

    def _update_level(self) -> None:
        if self.level.isHidden() or self.level_source is None:
            return
        level = self.level_source()
        self.level.setValue(-60 if level is None else max(-60, min(0, round(level))))


def summary_line(
    release_ms: float | None,
    provider: str,
    device: str,
    memory: GpuMemory | None,
    fallback: str = "",
) -> str:
    """ "release → text 312 ms · CUDA (RTX 4090) · GPU mem 620/24564 MiB", and why the
    model runs elsewhere than asked ("cuda failed (out of GPU memory: ...); running on the
    CPU") when it does."""
    parts = ["no dictation yet" if release_ms is None else f"release → text {release_ms:.0f} ms"]
    if provider:
        where = provider.removeprefix("remote:")
        label = f"server {where.upper()}" if provider.startswith("remote:") else where.upper()
        named = device or (memory.name if memory is not None and where != "cpu" else "")
        parts.append(f"{label} ({named})" if named else label)
    if memory is not None:
        parts.append(f"GPU mem {memory.process_mb:.0f}/{memory.total_mb:.0f} MiB")
    if fallback:
        parts.append(fallback)
    return " · ".join(parts)
