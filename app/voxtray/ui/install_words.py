"""The share of an install done, as the tray and the windows show it beside the step
(`InstallProgress.said` words the step itself, for every front end)."""

from __future__ import annotations

from voxtray.models.progress import InstallProgress


def percent(progress: InstallProgress) -> str:
    """The share done, as " 42%", when the total is known; else nothing."""
    total = progress.total
    return f" {100 * progress.done // total}%" if total is not None and total > 0 else ""
