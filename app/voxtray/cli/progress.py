"""Progress on stderr: one rewritten line on a terminal, a line per stage otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from voxtray.models.progress import InstallProgress


class StderrProgress:
    """A `ProgressFn` that renders to stderr without flooding logs."""

    def __init__(self, label: str, stream: TextIO | None = None, interval_s: float = 0.2) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty()
        self.interval_s = interval_s
        self._stage = ""
        self._last = 0.0

    def __call__(self, progress: InstallProgress) -> None:
        stage = progress.said()
        done, total = progress.done, progress.total
        now = time.monotonic()
        new_stage = stage != self._stage
        finished = total is not None and done >= total
        if not (new_stage or finished or now - self._last >= self.interval_s):
            return
        self._last = now
        if self.interactive:
            self.stream.write(f"\r\x1b[K{self.label}: {stage} {_amount(done, total)}")
            if finished:
                self.stream.write("\n")
        elif new_stage:
            self.stream.write(f"{self.label}: {stage}\n")
        self._stage = stage
        self.stream.flush()


def _amount(done: int, total: int | None) -> str:
    if total is None:
        return f"{done / 1e6:.1f} MB" if done > 1000 else ""
    if total > 1000:
        return f"{done / 1e6:.1f}/{total / 1e6:.1f} MB ({100 * done // max(total, 1)}%)"
    return f"{done}/{total}"
