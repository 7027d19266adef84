"""Kept dictation audio: written privately, read back, pruned by age and size."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import numpy as np
import pytest

from voxtray.errors import DiskError, NotFoundError
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
    archive.prune({1, 2, 3}, now=now)
    assert [archive.has(i) for i in (1, 2, 3)] == [False, True, True]


def test_pruned_by_age(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio", AudioLimits(megabytes=200, days=2))
    now = 2_000_000_000.0
    for entry_id, age_days in ((1, 5), (2, 3), (3, 1)):
        archive.store(entry_id, tone(0.2))
        t = now - age_days * 86400
        os.utime(archive.path(entry_id), (t, t))
    removed = archive.prune({1, 2, 3}, now=now)
    assert sorted(p.name for p in removed) == ["1.wav", "2.wav"]
    assert archive.has(3)


# --- what pruning leaves alone ---------------------------------------------------------

OLD = 2_000_000_000.0 - 90 * 86400  # 90 days before `NOW`
NOW = 2_000_000_000.0


def _aged(path: Path, when: float = OLD) -> Path:
    os.utime(path, (when, when), follow_symlinks=False)
    return path


def test_pruning_removes_only_regular_files_the_history_names(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio", AudioLimits(megabytes=200, days=30))
    for entry_id in (1, 2):
        archive.store(entry_id, tone(0.2))
        _aged(archive.path(entry_id))
    folder = archive.folder
    elsewhere = tmp_path / "elsewhere.wav"
    elsewhere.write_bytes(b"RIFF")
    users = {
        "interview.wav": lambda p: p.write_bytes(b"RIFF" * 1000),
        "12.wav": lambda p: p.write_bytes(b"RIFF"),  # an id the history does not name
        "007.wav": lambda p: p.write_bytes(b"RIFF"),  # not how Voxtray names a file
        "3.wav": lambda p: p.mkdir(),  # a folder, though the history names 3
        "4.wav": lambda p: p.symlink_to(elsewhere),  # a link, though the history names 4
    }
    for name, make in users.items():
        make(folder / name)
        _aged(folder / name)
    removed = archive.prune({1, 2, 3, 4}, now=NOW)
    assert sorted(p.name for p in removed) == ["1.wav", "2.wav"]
    assert sorted(os.listdir(folder)) == sorted(users)
    assert elsewhere.exists()
    assert not archive.has(3)
    assert not archive.has(4)
    assert not archive.delete(3)  # deleting entry 3 leaves the folder of that name
    assert (folder / "3.wav").is_dir()


def test_a_linked_audio_folder_is_never_followed(tmp_path: Path) -> None:
    lectures = tmp_path / "lectures"
    lectures.mkdir()
    for name in ("1.wav", "monday.wav", "tuesday.wav"):
        (lectures / name).write_bytes(b"RIFF")
        _aged(lectures / name)
    (tmp_path / "audio").symlink_to(lectures)
    archive = AudioArchive(tmp_path / "audio", AudioLimits(megabytes=1, days=1))
    assert archive.prune({1, 2}, now=NOW) == []
    with pytest.raises(DiskError, match="a link, not a folder of Voxtray's own"):
        archive.store(2, tone(0.2))
    assert not archive.has(1)
    assert not archive.delete(1)
    assert sorted(os.listdir(lectures)) == ["1.wav", "monday.wav", "tuesday.wav"]
