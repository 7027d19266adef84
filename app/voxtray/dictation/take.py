"""One press of the key, from `start` to the text: its journal entry, the window it types
into and when its audio began. Finishing reads it; the microphone thread fills in the
audio's start and a lost device."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voxtray.dictation.journal import Recording
    from voxtray.output.target import FocusTarget


@dataclass
class Take:
    recording: Recording | None = None
    """Its journal entry (None when no journal is kept for it)."""
    target: FocusTarget | None = None
    """The window focused at the press, where its text goes."""
    started_at: float = field(default_factory=time.perf_counter)
    first_audio_at: float | None = None
    mic_error: str | None = None
    """Why the microphone stopped mid-way, None while it works."""

    def heard(self) -> None:
        """Audio arrived (the microphone thread)."""
        if self.first_audio_at is None:
            self.first_audio_at = time.perf_counter()

    @property
    def mic_start_ms(self) -> float:
        """From the press to the first audio."""
        return 1000 * ((self.first_audio_at or self.started_at) - self.started_at)
