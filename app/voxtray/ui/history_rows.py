"""The History window's table: one row of cells per dictation, the text first."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableWidgetItem

from voxtray.history.export import release_to_text_ms
from voxtray.history.store import Entry
from voxtray.ui.history_cleanup import cleanup_cell, text_cell

COLUMNS = (
    "Text",
    "Mode",
    "Clean-up",
    "Time",
    "Went to",
    "Duration",
    "Model",
    "Ran on",
    "Release → text",
    "Delivered",
)


def item(text: str, tip: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled)
    if tip:
        item.setToolTip(tip)
    return item


def row(entry: Entry) -> list[str]:
    latency = release_to_text_ms(entry)
    delivered = "yes" if entry.delivered else ("partly" if entry.partial else "no")
    if entry.verified:
        delivered += f" ({entry.verified})"
    if entry.rerun_of is not None:
        delivered = f"re-run of #{entry.rerun_of}"
    if entry.damage is not None:
        delivered = f"damaged: {entry.damage}"
    when = entry.created_at
    return [
        text_cell(entry),
        entry.mode or "",
        cleanup_cell(entry),
        when.astimezone().strftime("%Y-%m-%d %H:%M:%S") if when is not None else "unknown time",
        entry.delivery_target or "",
        f"{entry.audio_s:.1f} s",
        entry.model,
        f"{entry.provider} ({entry.engine})",
        f"{latency:.0f} ms" if latency is not None else "",
        delivered,
    ]


def dictations(count: int) -> str:
    return "1 dictation is" if count == 1 else f"{count} dictations are"
