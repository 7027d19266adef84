"""Files the app keeps, damaged from outside: kept dictation audio cut inside a sample or
replaced by audio of another shape is read or refused with a one-line reason."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from app.errors import DiskError
from app.history_audio import AudioArchive

pytestmark = [pytest.mark.faults, pytest.mark.hostile]


def test_kept_audio_cut_inside_its_last_sample_is_read(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio")
    path = archive.store(7, np.full(1000, 0.25, dtype=np.float32))
    assert path is not None
    with path.open("r+b") as stream:  # the header still promises 1000 samples
        stream.truncate(path.stat().st_size - 1)
    samples = archive.load(7)
    assert samples.size == 999
    assert np.allclose(samples, 0.25, atol=1e-3)


def test_kept_audio_of_another_shape_is_refused_in_one_line(tmp_path: Path) -> None:
    archive = AudioArchive(tmp_path / "audio")
    path = archive.store(8, np.zeros(1000, dtype=np.float32))
    assert path is not None
    with wave.open(str(path), "wb") as stream:
        stream.setnchannels(2)
        stream.setsampwidth(2)
        stream.setframerate(44100)
        stream.writeframes(bytes(4000))
    with pytest.raises(DiskError, match="not the 16 kHz mono 16-bit audio"):
        archive.load(8)
