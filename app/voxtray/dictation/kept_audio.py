"""A dictation's audio, gathered while it is spoken and kept beside its history entry once
the text has been delivered. Pruning the kept audio is the watcher's, never on the way
from the key's release to the text."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from voxtray.errors import VoxtrayError
from voxtray.history.audio import AudioArchive, AudioLimits
from voxtray.history.store import History

Chunk = NDArray[np.float32]


class KeptAudio:
    """The audio side of `Dictation`: what was heard, the archive, and when to prune it.

    Args:
        archive: Where recordings are kept (the History window reads it too).
        history: Names the entries whose recordings pruning may remove.
        warn: Shows the user a one-line problem (the archive refused a recording).
    """

    def __init__(
        self, archive: AudioArchive, history: History, warn: Callable[[str], None]
    ) -> None:
        self.archive = archive
        self._history = history
        self._warn = warn
        self._heard: list[Chunk] = []
        self._prune_due = threading.Event()
        self._refusing = False  # the last recording was refused, and the user told

    def set_limits(self, megabytes: int, days: int) -> None:
        """New limits apply at the next prune, which is then due."""
        self.archive.limits = AudioLimits(megabytes, days)
        self._prune_due.set()

    def begin(self) -> None:
        self._heard = []

    def hear(self, chunk: Chunk) -> None:
        if self.archive.limits.keeps_any:
            self._heard.append(chunk.copy())

    def keep(self, history_id: int | None) -> None:
        """Write what was heard for the entry (nothing without one); a refusal is a
        warning (the first of a run of them), never a failed dictation."""
        heard, self._heard = self._heard, []
        if not heard or history_id is None:
            return
        try:
            self.archive.store(history_id, np.concatenate(heard))
        except VoxtrayError as exc:
            if not self._refusing:  # once, not at every dictation, until it works again
                self._warn(str(exc))
            self._refusing = True
            return
        self._refusing = False
        self._prune_due.set()

    def prune_if_due(self) -> None:
        """Prune once something was kept or the limits changed (the watcher's call)."""
        if not self._prune_due.is_set():
            return
        self._prune_due.clear()
        try:
            named = self._history.ids()
        except (VoxtrayError, RuntimeError):
            self._prune_due.set()  # the history is locked or closing: next time
            return
        self.archive.prune(named)
