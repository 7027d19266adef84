"""The CPU-vs-GPU matrix as a PNG bar chart, drawn with Qt (no plotting library needed)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter

from voxtray.bench.runner import MatrixCell

PROVIDER_COLORS = {"cpu": "#607d8b", "cuda": "#76b900", "tensorrt": "#00897b"}


def save_matrix_chart(cells: list[MatrixCell], path: Path, title: str) -> None:
    """Warm latency per model and precision, one bar per provider that really ran."""
    if QGuiApplication.instance() is None:
        # Fonts need an application; no screen is needed to paint into an image.
        QGuiApplication(["voxtray-chart", "-platform", "offscreen"])
    width, row_h = 1100, 34
    height = 90 + row_h * len(cells)
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setFont(QFont("DejaVu Sans", 11, QFont.Weight.Bold))
    painter.drawText(QRectF(20, 10, width - 40, 30), title)
    painter.setFont(QFont("DejaVu Sans", 9))
    top = max((c.warm_ms for c in cells), default=1.0) or 1.0
    left, bar_w = 330, 360
    for row, cell in enumerate(cells):
        y = 60 + row * row_h
        label = f"{cell.model} {cell.precision} ({cell.requested}→{cell.provider})"
        painter.setPen(QColor("black"))
        painter.drawText(QRectF(20, y, left - 30, row_h - 6), Qt.AlignmentFlag.AlignVCenter, label)
        length = bar_w * cell.warm_ms / top
        color = QColor(PROVIDER_COLORS.get(cell.provider, "#9e9e9e"))
        painter.fillRect(QRectF(left, y + 4, length, row_h - 14), color)
        note = f"{cell.warm_ms:.0f} ms warm, {cell.cold_ms:.0f} ms cold, WER {cell.wer:.1%}"
        if cell.broken:
            note += f", BROKEN: {cell.broken}"
            painter.setPen(QColor("#c62828"))
        note_box = QRectF(left + bar_w + 12, y, width - left - bar_w - 20, row_h - 6)
        painter.drawText(note_box, Qt.AlignmentFlag.AlignVCenter, note)
    painter.end()
    image.save(str(path))
