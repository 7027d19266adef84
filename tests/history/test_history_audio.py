"""Kept dictation audio: written privately, read back, pruned by age and size."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import numpy as np
import pytest

from voxtray.errors import NotFoundError
from voxtray.history.audio import AudioArchive, AudioLimits


def tone(seconds: float) -> np.ndarray:
    t = np.arange(int(16000 * seconds), dtype=np.float32) / 16000
    return (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def test_store_and_load_round_trip(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio")
    samples = tone(1.0)
    path = archive.store(7, samples)
    assert path == tmp_path / "audio" / "7.wav"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.stat().st_size == 44 + 2 * samples.size
    back = archive.load(7)
    assert back.size == samples.size
    assert np.max(np.abs(back - samples)) < 1e-4
    with pytest.raises(NotFoundError):
        archive.load(8)


def test_zero_limits_keep_nothing(tmp_path: Path) -> None:
    for limits in (AudioLimits(0, 30), AudioLimits(200, 0)):
        archive = AudioArchive(tmp_path / "audio", limits)
        assert archive.store(1, tone(0.5)) is None
        assert not archive.has(1)


def test_pruned_oldest_first_to_the_size_limit(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio", AudioLimits(megabytes=1, days=30))
    # 12 s of 16-bit audio is 384 kB: two fit in 1 MiB, a third does not.
    now = time.time()
    for entry_id in (1, 2, 3):
        archive.store(entry_id, tone(12.0))
        if archive.has(entry_id):
            os.utime(archive.path(entry_id), (now - 10 + entry_id, now - 10 + entry_id))
    archive.prune(now=now)
    assert [archive.has(i) for i in (1, 2, 3)] == [False, True, True]


def test_pruned_by_age(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio", AudioLimits(megabytes=200, days=2))
    now = 2_000_000_000.0
    for entry_id, age_days in ((1, 5), (2, 3), (3, 1)):
        archive.store(entry_id, tone(0.2))
        t = now - age_days * 86400
        os.utime(archive.path(entry_id), (t, t))
    removed = archive.prune(now=now)
    assert sorted(p.name for p in removed) == ["1.wav", "2.wav"]
    assert archive.has(3)
