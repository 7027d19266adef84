"""AI clean-up as a step of the dictation: the recognised text goes to the cleaner within its
budget, the text to deliver comes back, and what clean-up made of it goes to history with
the entry, including an answer that comes after the text was typed (kept, never typed)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxtray.config import Settings
from voxtray.errors import VoxtrayError
from voxtray.history.store import Cleanup, History

if TYPE_CHECKING:  # the HTTP client is loaded only once clean-up is turned on
    from voxtray.cleanup import Cleaner, CleanupOutcome

log = logging.getLogger(__name__)


def cleaner_of(settings: Settings) -> Cleaner | None:
    """The dictation's cleaner; None while clean-up is off (the key is not even read)."""
    if not settings.cleanup_enabled:
        return None
    from voxtray.cleanup import cleaner_for, cleanup_key_store

    return cleaner_for(settings, api_key=lambda: cleanup_key_store().get())


def kept(outcome: CleanupOutcome) -> Cleanup:
    """A clean-up as history keeps it."""
    reason = outcome.reason.value + (" (late)" if outcome.late else "")
    return Cleanup(outcome.raw, outcome.cleaned, f"{reason}: {outcome.summary()}")


@dataclass
class Cleaned:
    """The text to deliver and, with clean-up on, what it made of the recognised text."""

    text: str
    outcome: CleanupOutcome | None = None

    @property
    def history(self) -> Cleanup | None:
        return None if self.outcome is None else kept(self.outcome)

    @property
    def stages(self) -> dict[str, float]:
        return {} if self.outcome is None else self.outcome.timings.stages()

    @property
    def line(self) -> str | None:
        """The HUD's line when the raw text was delivered for a reason worth telling."""
        outcome = self.outcome
        if outcome is None or outcome.accepted:
            return None
        return f"clean-up: {outcome.summary()}"


class LateAnswer:
    """Writes an answer that came after the budget to the entry, once the entry exists."""

    def __init__(self, history: History) -> None:
        self._history = history
        self._lock = threading.Lock()
        self._entry: int | None = None
        self._waiting: CleanupOutcome | None = None

    def arrived(self, outcome: CleanupOutcome) -> None:
        with self._lock:
            entry = self._entry
            if entry is None:
                self._waiting = outcome
                return
        self._write(entry, outcome)

    def stored_as(self, entry: int | None) -> None:
        with self._lock:
            self._entry, waiting, self._waiting = entry, self._waiting, None
        if entry is not None and waiting is not None:
            self._write(entry, waiting)

    def _write(self, entry: int, outcome: CleanupOutcome) -> None:
        try:
            self._history.mark_cleanup(entry, kept(outcome))
        except (VoxtrayError, RuntimeError) as exc:
            log.warning("a late clean-up answer was not kept in history: %s", exc)


def clean(cleaner: Cleaner | None, text: str, late: LateAnswer) -> Cleaned:
    """``text`` cleaned up, or as it is: with clean-up off, with nothing to clean, or when
    the cleaner gave the raw text back (it says why)."""
    if cleaner is None or not text.strip():
        return Cleaned(text)
    outcome = cleaner.clean(text, on_late=late.arrived)
    return Cleaned(outcome.text, outcome)
