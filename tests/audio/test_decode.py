"""Tests for decoding audio files to 16 kHz mono float32, and for the polyphase resampler."""

from __future__ import annotations

import csv
import os
import stat
import time
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile  # type: ignore[import-untyped, unused-ignore]
from numpy.typing import NDArray

from tests.support.audio import SPEECH_DIR
from voxtray.audio import SAMPLE_RATE, decode
from voxtray.audio.decode import load_audio, resample
from voxtray.errors import BadInputError, NotFoundError

EVAL = SPEECH_DIR
CLIP = EVAL / "wav" / "ls_1089-134686-0001.wav"

Audio = NDArray[np.float32]


def _read_int16_wav(path: Path) -> tuple[Audio, int]:
    """Reference decoder: the standard library's wave module, int16 / 32768."""
    with wave.open(str(path), "rb") as stream:
        assert stream.getnchannels() == 1
        assert stream.getsampwidth() == 2
        rate = stream.getframerate()
        raw = stream.readframes(stream.getnframes())
    return (np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0), rate


def _require(path: Path) -> Path:
    return path


def _correlation(a: Audio, b: Audio) -> float:
    return float(np.corrcoef(a.astype(np.float64), b.astype(np.float64))[0, 1])


def _best_lag(reference: Audio, signal: Audio, max_lag: int) -> int:
    """Lag (in samples) by which ``signal`` trails ``reference``, by FFT cross-correlation."""
    size = 1 << int(np.ceil(np.log2(len(reference) + len(signal))))
    spectrum = np.fft.rfft(signal, size) * np.conj(np.fft.rfft(reference, size))
    xcorr = np.fft.irfft(spectrum, size)
    lags = np.r_[np.arange(0, max_lag + 1), np.arange(-max_lag, 0)]
    return int(lags[np.argmax(xcorr[lags])])


def _fft_upsample(audio: Audio, length: int) -> Audio:
    """Band-limited resampling by zero-padding the spectrum: independent of the code tested."""
    spectrum = np.fft.rfft(audio.astype(np.float64))
    return (np.fft.irfft(spectrum, length) * (length / len(audio))).astype(np.float32)


def _tone(freq: float, rate: int, seconds: float, amplitude: float = 0.5) -> Audio:
    t = np.arange(round(rate * seconds)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _middle(audio: Audio) -> Audio:
    """The middle half, away from the edges where the filter sees the zero padding."""
    return audio[len(audio) // 4 : 3 * len(audio) // 4]


def _rms(audio: Audio) -> float:
    return float(np.sqrt(np.mean(np.square(audio, dtype=np.float64))))


# --- real clips -------------------------------------------------------------------------


def test_16k_wav_is_bit_exact() -> None:
    expected, rate = _read_int16_wav(_require(CLIP))
    assert rate == SAMPLE_RATE
    audio = load_audio(CLIP)
    assert audio.dtype == np.float32
    assert audio.ndim == 1
    np.testing.assert_array_equal(audio, expected)


def _telephone_clip() -> Path:
    """The clip that the manifest says was recorded at 8 kHz (and stored at 16 kHz)."""
    manifest = EVAL / "manifest.tsv"
    with manifest.open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    clips = [row["wav"] for row in rows if "8 kHz" in row["notes"]]
    assert clips, "the evaluation set should hold an 8 kHz telephone-band clip"
    return _require(EVAL / clips[0])


def test_8k_telephone_clip_upsamples_to_the_right_length(tmp_path: Path) -> None:
    original, rate = _read_int16_wav(_telephone_clip())
    assert rate == SAMPLE_RATE  # stored upsampled; rebuild the 8 kHz original below
    # Confirm it is telephone band: next to nothing above 4 kHz...
    power = np.abs(np.fft.rfft(original.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(original), 1 / rate)
    assert power[freqs > 4100].sum() < 1e-3 * power.sum()
    # ...so every other sample is an alias-free 8 kHz recording of the same speech.
    narrow = original[: len(original) // 2 * 2 : 2]
    path = tmp_path / "telephone.wav"
    soundfile.write(path, narrow, 8000, subtype="PCM_16")

    audio = load_audio(path)

    assert len(audio) == round(len(narrow) * SAMPLE_RATE / 8000) == 2 * len(narrow)
    assert _correlation(audio, original[: len(audio)]) > 0.99


@pytest.fixture(scope="module")
def speech() -> Audio:
    """The 16 kHz clip, trimmed to a multiple of 160 samples so that 44.1 and 48 kHz
    versions have a whole number of samples."""
    audio, _ = _read_int16_wav(_require(CLIP))
    return audio[: len(audio) // 160 * 160]


def _stereo(speech: Audio, rate: int) -> NDArray[np.float32]:
    """Left: the speech at ``rate``; right: the same at half level, so the mean is 0.75x."""
    left = _fft_upsample(speech, len(speech) * rate // SAMPLE_RATE)
    return np.stack([left, 0.5 * left], axis=1)


@pytest.mark.parametrize(
    ("fmt", "subtype", "rate", "min_correlation"),
    [
        ("WAV", "PCM_16", 48000, 0.999),
        ("FLAC", "PCM_16", 44100, 0.999),
        ("OGG", "VORBIS", 44100, 0.9),
        ("OGG", "OPUS", 48000, 0.9),
        ("MP3", "MPEG_LAYER_III", 44100, 0.9),
    ],
)
def test_formats_round_trip(
    tmp_path: Path, speech: Audio, fmt: str, subtype: str, rate: int, min_correlation: float
) -> None:
    path = tmp_path / f"clip.{subtype.lower()}"
    soundfile.write(path, _stereo(speech, rate), rate, format=fmt, subtype=subtype)

    audio = load_audio(path)

    assert audio.dtype == np.float32
    assert abs(len(audio) - len(speech)) <= 2
    expected = 0.75 * speech
    # Lossy codecs may add an encoder delay that the decoder does not strip: align first.
    lag = _best_lag(expected, audio, max_lag=2000)
    assert abs(lag) <= (0 if fmt in ("WAV", "FLAC") else 1200)
    aligned, reference = (audio[lag:], expected) if lag >= 0 else (audio, expected[-lag:])
    length = min(len(aligned), len(reference))
    assert _correlation(aligned[:length], reference[:length]) > min_correlation
    # The level survives as well as the shape (mean of the two channels).
    assert _rms(aligned[:length]) == pytest.approx(_rms(reference[:length]), rel=0.1)
    if fmt in ("WAV", "FLAC"):
        assert np.max(np.abs(aligned[:length] - reference[:length])) < 2e-3


def test_sample_rate_argument(speech: Audio, tmp_path: Path) -> None:
    path = tmp_path / "clip.wav"
    soundfile.write(path, speech, SAMPLE_RATE, subtype="FLOAT")
    audio = load_audio(path, sample_rate=8000)
    assert len(audio) == round(len(speech) / 2)


# --- channels and range -----------------------------------------------------------------


def test_channels_are_averaged(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    channels = (0.3 * rng.standard_normal((4000, 3))).astype(np.float32)
    path = tmp_path / "three.wav"
    soundfile.write(path, channels, SAMPLE_RATE, subtype="FLOAT")
    np.testing.assert_allclose(load_audio(path), channels.mean(axis=1), atol=1e-6)


def test_output_is_clipped_and_finite(tmp_path: Path) -> None:
    samples = np.array([0.5, 1.5, -2.0, np.nan, np.inf, -np.inf, -0.25], dtype=np.float32)
    path = tmp_path / "hot.wav"
    soundfile.write(path, samples, SAMPLE_RATE, subtype="FLOAT")
    audio = load_audio(path)
    np.testing.assert_array_equal(audio, [0.5, 1.0, -1.0, 0.0, 1.0, -1.0, -0.25])


# --- resampler ----------------------------------------------------------------------------


def test_sine_48k_to_16k() -> None:
    audio = resample(_tone(1000, 48000, 2.0), 48000, 16000)
    assert audio.dtype == np.float32
    assert len(audio) == 32000
    expected = _tone(1000, 16000, 2.0)
    assert np.max(np.abs(_middle(audio) - _middle(expected))) < 1e-3
    spectrum = np.abs(np.fft.rfft(_middle(audio) * np.hanning(16000)))
    assert np.fft.rfftfreq(16000, 1 / 16000)[np.argmax(spectrum)] == 1000


@pytest.mark.parametrize("source_rate", [48000, 44100])
def test_anti_aliasing(source_rate: int) -> None:
    def gain_db(freq: float) -> float:
        out = resample(_tone(freq, source_rate, 1.0), source_rate, 16000)
        return float(20 * np.log10(_rms(_middle(out)) / _rms(_tone(freq, 16000, 1.0)) + 1e-12))

    assert gain_db(7000) > -0.1
    assert gain_db(7900) > -3.0  # kept: just inside the band
    assert gain_db(9000) < -60.0  # would alias to 7 kHz
    assert gain_db(12000) < -60.0  # would alias to 4 kHz


@pytest.mark.parametrize("freq", [1000, 3500])
def test_sine_8k_to_16k(freq: int) -> None:
    audio = resample(_tone(freq, 8000, 2.0), 8000, 16000)
    assert len(audio) == 32000
    assert np.max(np.abs(_middle(audio) - _middle(_tone(freq, 16000, 2.0)))) < 1e-3
    # No image of the tone mirrored about the old 4 kHz Nyquist frequency.
    spectrum = np.abs(np.fft.rfft(_middle(audio) * np.hanning(16000)))
    image = np.fft.rfftfreq(16000, 1 / 16000) > 4200
    assert spectrum[image].max() < 1e-3 * spectrum.max()


def test_identity() -> None:
    audio = _tone(440, 16000, 0.5)
    assert resample(audio, 16000, 16000) is audio


def test_constant_keeps_its_level() -> None:
    for source_rate in (8000, 22050, 44100, 48000):
        audio = resample(np.full(source_rate, 0.25, dtype=np.float32), source_rate, 16000)
        np.testing.assert_allclose(_middle(audio), 0.25, rtol=1e-4)


@pytest.mark.parametrize(
    ("length", "source_rate", "target_rate"),
    [
        (0, 44100, 16000),
        (1, 44100, 16000),
        (3, 44100, 16000),
        (5, 32000, 16000),
        (7, 8000, 16000),
        (44100, 44100, 16000),
        (123457, 22050, 16000),
        (99999, 16000, 44100),
        (1000, 11025, 16000),
    ],
)
def test_output_length(length: int, source_rate: int, target_rate: int) -> None:
    audio = np.ones(length, dtype=np.float32)
    assert len(resample(audio, source_rate, target_rate)) == round(
        length * target_rate / source_rate
    )


def test_odd_rate_pair() -> None:
    # 44 099 / 16 000 cannot be reduced: the per-phase path handles it.
    audio = resample(_tone(1000, 44099, 2.0), 44099, 16000)
    assert len(audio) == 32000
    assert np.max(np.abs(_middle(audio) - _middle(_tone(1000, 16000, 2.0)))) < 1e-3


@pytest.mark.parametrize(("source_rate", "target_rate"), [(44100, 16000), (8000, 16000)])
def test_dense_and_per_phase_paths_agree(
    monkeypatch: pytest.MonkeyPatch, source_rate: int, target_rate: int
) -> None:
    noise = np.random.default_rng(2).standard_normal(30000).astype(np.float32) * 0.2
    dense = resample(noise, source_rate, target_rate)
    decode._plan.cache_clear()
    monkeypatch.setattr(decode, "_MAX_DENSE_TAPS", 0)
    try:
        per_phase = resample(noise, source_rate, target_rate)
    finally:
        decode._plan.cache_clear()
    np.testing.assert_allclose(per_phase, dense, atol=1e-5)


def test_resample_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="positive"):
        resample(np.zeros(10, dtype=np.float32), 0, 16000)
    with pytest.raises(ValueError, match="mono"):
        resample(np.zeros((10, 2), dtype=np.float32), 8000, 16000)


# --- errors -------------------------------------------------------------------------------


def _assert_one_line(exc: pytest.ExceptionInfo[Exception], path: Path, reason: str) -> None:
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert reason in message


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.wav"
    with pytest.raises(NotFoundError) as exc:
        load_audio(path)
    assert str(exc.value) == f"{path}: no such file"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as exc:
        load_audio(tmp_path)
    _assert_one_line(exc, tmp_path, "is a directory")


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.wav"
    soundfile.write(path, np.zeros(100, dtype=np.float32), SAMPLE_RATE)
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("permissions do not stop this user (root?) from reading")
        with pytest.raises(BadInputError) as exc:
            load_audio(path)
        _assert_one_line(exc, path, "permission denied")
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_unreadable_file_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as above where the user (root) can read anything: refuse the open."""
    path = tmp_path / "secret.wav"
    soundfile.write(path, np.zeros(100, dtype=np.float32), SAMPLE_RATE)
    real_open = Path.open

    def refuse(self: Path, *args: object, **kwargs: object) -> object:
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(BadInputError) as exc:
        load_audio(path)
    _assert_one_line(exc, path, "permission denied")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "pipe.wav"
    os.mkfifo(path)
    with pytest.raises(BadInputError) as exc:
        load_audio(path)
    _assert_one_line(exc, path, "not a regular file")


def _clip_bytes() -> bytes:
    return _require(CLIP).read_bytes()


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("empty.wav", lambda: b"", "empty file"),
        ("notes.wav", lambda: b"just some text, not audio\n" * 40, "not a recognised audio"),
        ("noise.mp3", lambda: np.random.default_rng(3).bytes(20000), ""),
        ("cut10.wav", lambda: _clip_bytes()[:10], "not a recognised audio"),
        ("cut30.wav", lambda: _clip_bytes()[:30], "truncated"),
        ("header-only.wav", lambda: _clip_bytes()[:44], "no audio samples"),
    ],
)
def test_bad_files(tmp_path: Path, name: str, make: object, reason: str) -> None:
    path = tmp_path / name
    assert callable(make)
    path.write_bytes(make())
    with pytest.raises(BadInputError) as exc:
        load_audio(path)
    _assert_one_line(exc, path, reason)


def test_zero_samples(tmp_path: Path) -> None:
    path = tmp_path / "silent.wav"
    soundfile.write(path, np.zeros(0, dtype=np.float32), SAMPLE_RATE)
    with pytest.raises(BadInputError) as exc:
        load_audio(path)
    _assert_one_line(exc, path, "no audio samples")


def test_truncated_wav_keeps_what_is_there(tmp_path: Path) -> None:
    """A recording cut off mid-write still transcribes: its header promises more data."""
    full, _ = _read_int16_wav(_require(CLIP))
    data = CLIP.read_bytes()
    path = tmp_path / "cut.wav"
    path.write_bytes(data[: 44 + 2 * 10001 + 1])  # ends inside a sample, too
    audio = load_audio(path)
    np.testing.assert_array_equal(audio, full[:10001])


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("compressed")
    noise = np.random.default_rng(4).standard_normal((48000, 2)).astype(np.float32) * 0.2
    out = {}
    for fmt, subtype in (("FLAC", "PCM_16"), ("OGG", "VORBIS"), ("OGG", "OPUS")):
        path = folder / f"x.{subtype.lower()}"
        soundfile.write(path, noise, 48000, format=fmt, subtype=subtype)
        out[subtype] = path.read_bytes()
    return out


def _damage(data: bytes) -> bytes:
    middle = len(data) // 3
    junk = np.random.default_rng(5).bytes(2000)
    return data[:middle] + junk + data[middle + len(junk) :]


@pytest.mark.parametrize(
    ("subtype", "cut"),
    [
        ("PCM_16", lambda d: d[: len(d) // 2]),  # FLAC stream ends mid-frame
        ("PCM_16", _damage),  # FLAC frames overwritten with junk
        ("VORBIS", lambda d: d[:200]),  # OGG cut inside its headers
        ("OPUS", lambda d: d[:100]),  # OGG Opus cut inside its headers
    ],
)
def test_corrupt_compressed(
    tmp_path: Path, compressed: dict[str, bytes], subtype: str, cut: object
) -> None:
    path = tmp_path / f"broken.{subtype.lower()}"
    assert callable(cut)
    path.write_bytes(cut(compressed[subtype]))
    with pytest.raises(BadInputError) as exc:
        load_audio(path)
    _assert_one_line(exc, path, "truncated")


# --- speed --------------------------------------------------------------------------------


@pytest.mark.slow
def test_ten_minutes_of_cd_audio_is_fast(tmp_path: Path) -> None:
    rate, seconds = 44100, 600
    rng = np.random.default_rng(6)
    t = np.arange(rate * seconds) / rate
    stereo = 0.05 * rng.standard_normal((len(t), 2))
    stereo[:, 0] += 0.3 * np.sin(2 * np.pi * 440 * t)
    stereo[:, 1] += 0.3 * np.sin(2 * np.pi * 1000 * t)
    path = tmp_path / "long.wav"
    soundfile.write(path, stereo, rate, subtype="PCM_16")
    del stereo, t

    start = time.perf_counter()
    audio = load_audio(path)
    elapsed = time.perf_counter() - start

    assert len(audio) == seconds * SAMPLE_RATE
    print(f"\ndecoding {seconds} s of 2-channel audio took {elapsed:.1f} s")
    # Both tones made it through at half level (mean of the channels).
    window = audio[: SAMPLE_RATE * 10].astype(np.float64)
    n = np.arange(len(window)) / SAMPLE_RATE
    for freq in (440, 1000):
        level = 2 * abs(np.mean(window * np.exp(-2j * np.pi * freq * n)))
        assert level == pytest.approx(0.15, rel=0.02)
