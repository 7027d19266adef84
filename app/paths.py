"""Where Voxtray keeps its data: one folder, moved as a whole by VOXTRAY_HOME."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "VOXTRAY_HOME"


def data_home() -> Path:
    """The folder for settings, models and history.

    `VOXTRAY_HOME` wins, so tests and portable installs never touch the user's real data;
    otherwise the platform's user data folder.
    """
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("voxtray", appauthor=False))


def models_dir() -> Path:
    return data_home() / "models"
