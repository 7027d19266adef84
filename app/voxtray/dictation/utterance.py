"""What one dictation produced, as the HUD, the tray and `voxtray status` show it."""

from __future__ import annotations

from dataclasses import dataclass

from voxtray.inference.pipeline import UtteranceRecord


@dataclass
class Utterance:
    """What the HUD and `voxtray status` show about the last dictation."""

    text: str
    history_id: int | None
    """None while the history could not store it (it waits in memory and the journal)."""
    record: UtteranceRecord
    timings_ms: dict[str, float]
    delivered: bool
    error: str | None = None
    partial: bool = False  # typing stopped early: part typed, the rest on the clipboard
    store_error: str | None = None
    """Why the history could not store it; it is retried."""
    verified: str | None = None
    """What reading the field back found (verified, unverified, missing), "pending" while
    it runs; None when nothing was typed."""
    output: str = ""
    """The output that delivered it and why it is the one on this desktop."""
    cleanup: str | None = None
    """Why AI clean-up left the text as recognised, when it did (None: off or taken)."""
    mode: str | None = None
    """The mode the window chose and what it changes (None: the settings as they are)."""
