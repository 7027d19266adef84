"""Data folders for command-line tests: the shared store's default models linked in, or
one file of them damaged, without ever writing the shared store."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.models import ensure_installed
from voxtray.models.store import ModelStore

STT = "whisper-tiny.en"


REPAIR_HINTS = (f"voxtray models install {STT} --force", "voxtray models verify")


@pytest.fixture(scope="module")
def installed(model_store: ModelStore) -> ModelStore:
    """The shared test store with the default models (VAD and whisper-tiny.en)."""
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    return model_store


def home_env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "VOXTRAY_HOME": str(home), **extra}
    env.pop("VOXTRAY_CATALOG", None)
    return env


def linked_home(tmp_path: Path, store: ModelStore) -> Path:
    """A fresh VOXTRAY_HOME whose models/ is the shared test store (read only here)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "models").symlink_to(store.root, target_is_directory=True)
    return home


def damaged_home(tmp_path: Path, store: ModelStore, rel: str, data: bytes | None) -> Path:
    """A VOXTRAY_HOME whose whisper-tiny.en links every file of the shared store except
    `rel`, which holds `data` (None: missing). The shared store is never written."""
    home = tmp_path / "home"
    models = home / "models"
    models.mkdir(parents=True)
    (models / "silero-vad-v6").symlink_to(store.path("silero-vad-v6"), target_is_directory=True)
    source, copy = store.path(STT), models / STT
    copy.mkdir()
    for item in source.iterdir():
        if item.name == "manifest.json":
            shutil.copy2(item, copy / item.name)
        elif item.name != rel:
            (copy / item.name).symlink_to(item, target_is_directory=item.is_dir())
    if data is not None:
        (copy / rel).write_bytes(data)
    return home


def snapshot(folder: Path) -> dict[str, int]:
    """Every path under `folder` (links not followed) and its size: what a run may change."""
    return {
        str(path.relative_to(folder)): path.lstat().st_size for path in sorted(folder.rglob("*"))
    }


ENCODER = "tiny.en-encoder.int8.onnx"


TOKENS = "tiny.en-tokens.txt"


CPU_INT8 = ("--provider", "cpu", "--precision", "int8")  # the variant that is damaged
