"""Uploads that cost little to send and much to decode, against the real server
(stand-in model): refused by sampling rate before decoding, by duration while decoding,
and a valid FLAC of unknown length is transcribed."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
import soundfile

from tests.support.hostile_serving import MODEL, peak_rss_mb, start_stand_in
from tests.support.serving import Served

pytest.importorskip("uvicorn", reason="the serve extra is not installed")

pytestmark = [pytest.mark.faults, pytest.mark.hostile]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("hostile-decode")
    server = start_stand_in(home, "--no-auth", "--max-audio-s", "30")
    yield server
    server.stop()


def _flac(seconds: float, rate: int, loud: bool = True) -> bytes:
    samples = np.zeros(int(seconds * rate), dtype=np.int16)
    if loud:
        samples = (np.sin(np.arange(samples.size) * 0.05) * 8000).astype(np.int16)
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, format="FLAC")
    return buffer.getvalue()


def _of_unknown_length(flac: bytes) -> bytes:
    """The same stream with STREAMINFO's total-samples (and MD5) unset, as a streaming
    encoder writes it."""
    data = bytearray(flac)
    assert data[:4] == b"fLaC"
    data[21] &= 0xF0  # the top 4 of the 36 bits of total samples
    data[22:26] = bytes(4)
    data[26:42] = bytes(16)
    return bytes(data)


def _post(served: Served, audio: bytes) -> httpx.Response:
    return httpx.post(
        served.base_url + "/audio/transcriptions",
        files={"file": ("a.flac", audio, "audio/flac")},
        data={"model": MODEL},
        timeout=60,
    )


def test_high_sampling_rate_is_refused_before_decoding(served: Served) -> None:
    upload = _flac(20, 384_000, loud=False)  # 7.7 M samples in a small file
    began = time.monotonic()
    reply = _post(served, upload)
    took = time.monotonic() - began
    assert reply.status_code == 400, reply.text
    assert "384000 Hz is above the limit of 48000 Hz" in reply.json()["error"]["message"]
    assert took < 2.0
    assert peak_rss_mb(served.process) < 300


def test_flac_of_unknown_length_is_transcribed(served: Served) -> None:
    reply = _post(served, _of_unknown_length(_flac(3, 16000)))
    assert reply.status_code == 200, reply.text
    assert reply.json()["text"] == "heard 3.0 s"


def test_flac_of_unknown_length_past_the_limit_stops_decoding(served: Served) -> None:
    reply = _post(served, _of_unknown_length(_flac(45, 48000, loud=False)))
    assert reply.status_code == 413, reply.text
    assert reply.json()["error"]["code"] == "audio_too_long"
    assert "30 s" in reply.json()["error"]["message"]
