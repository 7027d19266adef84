"""Tests for the numpy Whisper log-mel front end."""

from __future__ import annotations

import math
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.support.audio import clip_path
from voxtray.audio import SAMPLE_RATE
from voxtray.audio.features import (
    CHUNK_FRAMES,
    HOP_LENGTH,
    N_FFT,
    log_mel_spectrogram,
    mel_filters,
)

CLIP = clip_path("ls_1089-134686-0001")


def _read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as wav:
        assert wav.getnchannels() == 1
        assert wav.getsampwidth() == 2
        assert wav.getframerate() == SAMPLE_RATE
        raw = wav.readframes(wav.getnframes())
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0


@pytest.fixture(scope="module")
def clip() -> np.ndarray:
    return _read_wav(CLIP)


# Slaney mel scale written out with scalars, independently of the module under test.
def _slaney_mel(hz: float) -> float:
    if hz < 1000.0:
        return 3.0 * hz / 200.0
    return 15.0 + 27.0 * math.log(hz / 1000.0) / math.log(6.4)


def _slaney_hz(mel: float) -> float:
    if mel < 15.0:
        return 200.0 * mel / 3.0
    return 1000.0 * 6.4 ** ((mel - 15.0) / 27.0)


def _band_edges_hz(n_mels: int, sample_rate: int) -> list[float]:
    top = _slaney_mel(sample_rate / 2.0)
    return [_slaney_hz(top * i / (n_mels + 1)) for i in range(n_mels + 2)]


def _reference_filter_weight(edges: list[float], band: int, hz: float) -> float:
    lo, mid, hi = edges[band], edges[band + 1], edges[band + 2]
    if hz <= lo or hz >= hi:
        return 0.0
    rise = (hz - lo) / (mid - lo) if hz <= mid else (hi - hz) / (hi - mid)
    return rise * 2.0 / (hi - lo)


# --- mel_filters -----------------------------------------------------------------------


@pytest.mark.parametrize("n_mels", [80, 128])
def test_mel_filters_shape_dtype_and_sign(n_mels: int) -> None:
    filters = mel_filters(n_mels)
    assert filters.shape == (n_mels, N_FFT // 2 + 1)
    assert filters.dtype == np.float32
    assert np.all(filters >= 0.0)
    # Every band catches at least one FFT bin, so no mel channel is dead.
    assert np.all(filters.max(axis=1) > 0.0)


def test_mel_filters_known_scale_points() -> None:
    # Slaney: 1 kHz is mel 15, and the top edge (8 kHz) is mel 45.2456...
    assert _slaney_mel(1000.0) == pytest.approx(15.0)
    assert _slaney_mel(8000.0) == pytest.approx(45.245640471924965)
    # The last band ends at Nyquist, so the top FFT bin gets no weight from any band,
    # while the bin below it does.
    filters = mel_filters(80)
    assert filters[:, -1].max() == pytest.approx(0.0, abs=1e-12)
    assert filters[-1, -2] > 0.0


@pytest.mark.parametrize("n_mels", [80, 128])
def test_mel_filters_match_scalar_reference(n_mels: int) -> None:
    edges = _band_edges_hz(n_mels, SAMPLE_RATE)
    bin_hz = SAMPLE_RATE / N_FFT
    expected = np.array(
        [
            [_reference_filter_weight(edges, band, k * bin_hz) for k in range(N_FFT // 2 + 1)]
            for band in range(n_mels)
        ]
    )
    np.testing.assert_allclose(mel_filters(n_mels), expected, rtol=1e-5, atol=1e-9)


def test_mel_filters_peak_bins_follow_band_centres() -> None:
    edges = _band_edges_hz(80, SAMPLE_RATE)
    bin_hz = SAMPLE_RATE / N_FFT
    filters = mel_filters(80)
    for band in range(80):
        centre_bin = edges[band + 1] / bin_hz
        assert int(np.argmax(filters[band])) in {math.floor(centre_bin), math.ceil(centre_bin)}


def test_mel_filters_have_unit_area_in_hz() -> None:
    # Slaney normalisation gives each triangle unit area over frequency. Sampling at
    # 40 Hz bins only approximates that, well enough once a band spans many bins.
    edges = np.array(_band_edges_hz(80, SAMPLE_RATE))
    filters = mel_filters(80).astype(np.float64)
    bin_hz = SAMPLE_RATE / N_FFT
    wide = (edges[2:] - edges[:-2]) > 6 * bin_hz
    assert wide.sum() >= 20
    np.testing.assert_allclose(filters[wide].sum(axis=1) * bin_hz, 1.0, rtol=0.02)


def test_mel_filters_cached_and_read_only() -> None:
    filters = mel_filters(80, SAMPLE_RATE, N_FFT)
    assert mel_filters(80, SAMPLE_RATE, N_FFT) is filters
    assert not filters.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        filters[0, 0] = 1.0


def test_mel_filters_match_faster_whisper() -> None:
    fw = pytest.importorskip("faster_whisper.feature_extractor")
    theirs = fw.FeatureExtractor.get_mel_filters(SAMPLE_RATE, N_FFT, n_mels=80)
    np.testing.assert_allclose(mel_filters(80), theirs, rtol=1e-5, atol=1e-9)


# --- log_mel_spectrogram ---------------------------------------------------------------


def test_matches_faster_whisper_on_real_speech(clip: np.ndarray) -> None:
    fw = pytest.importorskip("faster_whisper.feature_extractor")
    extractor = fw.FeatureExtractor(feature_size=80)
    ours = log_mel_spectrogram(clip)
    # faster-whisper also runs a centred STFT (1 + len // hop frames) and drops the last
    # frame, so with padding=0 both give len // hop frames and line up one to one. Its
    # default padding=160 would add exactly one frame; the count check catches that.
    theirs = extractor(clip, padding=0)
    assert ours.shape == theirs.shape == (80, len(clip) // HOP_LENGTH)
    assert ours.dtype == np.float32
    assert float(np.abs(ours - theirs).max()) < 1e-3


def test_matches_faster_whisper_with_whisper_padding(clip: np.ndarray) -> None:
    # Whisper's transcribe appends 30 s of silence before cutting 3000-frame windows.
    fw = pytest.importorskip("faster_whisper.feature_extractor")
    padding = CHUNK_FRAMES * HOP_LENGTH
    ours = log_mel_spectrogram(clip, padding=padding)
    theirs = fw.FeatureExtractor(feature_size=80)(clip, padding=padding)
    assert ours.shape == theirs.shape == (80, (len(clip) + padding) // HOP_LENGTH)
    assert float(np.abs(ours - theirs).max()) < 1e-3


def test_pure_tone_lands_in_the_right_band() -> None:
    freq = 1000.0
    t = np.arange(SAMPLE_RATE, dtype=np.float64) / SAMPLE_RATE
    tone = (0.5 * np.sin(2.0 * np.pi * freq * t)).astype(np.float32)
    spec = log_mel_spectrogram(tone)
    edges = _band_edges_hz(80, SAMPLE_RATE)
    centres = np.array(edges[1:-1])
    expected_band = int(np.argmin(np.abs(centres - freq)))
    # Away from the edges every frame sees the same steady tone.
    middle = spec[:, 10:-10]
    assert np.all(np.argmax(middle, axis=0) == expected_band)
    np.testing.assert_allclose(middle, middle[:, :1].repeat(middle.shape[1], axis=1), atol=1e-3)


def test_silence_is_constant() -> None:
    spec = log_mel_spectrogram(np.zeros(SAMPLE_RATE, dtype=np.float32))
    assert spec.shape == (80, SAMPLE_RATE // HOP_LENGTH)
    # Power 0 -> floor 1e-10 -> log10 = -10 everywhere -> (-10 + 4) / 4, up to the
    # float32 rounding of 1e-10.
    assert np.all(spec == spec[0, 0])
    assert float(spec[0, 0]) == pytest.approx(-1.5, abs=1e-6)


@pytest.mark.parametrize("n_mels", [80, 128])
def test_padding_adds_frames_and_floors_them(clip: np.ndarray, n_mels: int) -> None:
    padding = 5 * SAMPLE_RATE + 37  # not a multiple of the hop on purpose
    plain = log_mel_spectrogram(clip, n_mels=n_mels)
    padded = log_mel_spectrogram(clip, n_mels=n_mels, padding=padding)
    assert padded.shape == (n_mels, (len(clip) + padding) // HOP_LENGTH)
    assert padded.shape[1] > plain.shape[1]

    # Frames whose 400-sample window ends before the clip does never see the padding
    # (or the reflection), and silence only lowers values, so the peak and clamp stay put.
    untouched = (len(clip) - N_FFT // 2) // HOP_LENGTH
    np.testing.assert_allclose(padded[:, :untouched], plain[:, :untouched], atol=1e-6)

    # Frames entirely inside the zeros sit on the clamp: 8 decades below the peak,
    # which is 8 / 4 = 2.0 below it after scaling.
    first_silent = (len(clip) + N_FFT // 2) // HOP_LENGTH + 1
    tail = padded[:, first_silent:]
    assert tail.shape[1] > 0
    np.testing.assert_allclose(tail, padded.max() - 2.0, atol=1e-5)


def test_output_range_and_dtype(clip: np.ndarray) -> None:
    spec = log_mel_spectrogram(clip.astype(np.float64))
    assert spec.dtype == np.float32
    assert spec.flags.c_contiguous
    assert spec.max() - spec.min() <= 2.0 + 1e-6


@pytest.mark.parametrize(("n_samples", "frames"), [(0, 0), (159, 0), (160, 1), (199, 1), (401, 2)])
def test_short_inputs(n_samples: int, frames: int) -> None:
    rng = np.random.default_rng(n_samples)
    audio = (0.1 * rng.standard_normal(n_samples)).astype(np.float32)
    spec = log_mel_spectrogram(audio)
    assert spec.shape == (80, frames)
    assert np.all(np.isfinite(spec))


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="mono"):
        log_mel_spectrogram(np.zeros((2, 1600), dtype=np.float32))
    with pytest.raises(ValueError, match="padding"):
        log_mel_spectrogram(np.zeros(1600, dtype=np.float32), padding=-1)
