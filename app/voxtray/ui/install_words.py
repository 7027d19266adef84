"""Installing as the windows word it: the share done, shown beside the step
(`InstallProgress.said` words the step itself, for every front end), and the repair of a
model whose files are damaged."""

from __future__ import annotations

from voxtray.models.progress import InstallProgress


def percent(progress: InstallProgress) -> str:
    """The share done, as " 42%", when the total is known; else nothing."""
    total = progress.total
    return f" {100 * progress.done // total}%" if total is not None and total > 0 else ""


def reinstall_words(model: str) -> str:
    """How a damaged model is repaired in the windows."""
    return f"reinstall {model} in Settings, Model (Remove, then Install)"
