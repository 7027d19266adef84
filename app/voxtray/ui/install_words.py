"""How the windows, the tray and the HUD word a model's install and load progress."""

from __future__ import annotations

from voxtray.models.progress import InstallProgress, InstallStep


def progress_words(progress: InstallProgress) -> str:
    match progress.step:
        case InstallStep.DOWNLOADING:
            return f"downloading {progress.detail}"
        case InstallStep.UNPACKING:
            return "unpacking"
        case InstallStep.CONVERTING:
            return f"converting: {progress.detail}"
        case InstallStep.INSTALLED:
            return "installed"
        case InstallStep.LOADING:
            return "loading model"
        case InstallStep.WARMING_UP:
            return "warming up"


def percent(progress: InstallProgress) -> str:
    """The share done, as " 42%", when the total is known; else nothing."""
    total = progress.total
    return f" {100 * progress.done // total}%" if total is not None and total > 0 else ""
