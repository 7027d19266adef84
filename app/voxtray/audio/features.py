"""Whisper's log-mel spectrogram in plain numpy.

Matches what Whisper feeds its encoder (torch.stft with center=True, a periodic Hann
window, Slaney mel filters) without pulling in torch or librosa.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE

HOP_LENGTH = 160
N_FFT = 400
CHUNK_FRAMES = 3000  # 30 s of audio at HOP_LENGTH, the encoder's fixed input length

# Slaney mel scale: linear below 1 kHz, logarithmic above (librosa's htk=False).
_F_SP = 200.0 / 3.0
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def _hz_to_mel(hz: NDArray[np.float64]) -> NDArray[np.float64]:
    mel = hz / _F_SP
    log_region = hz >= _MIN_LOG_HZ
    mel[log_region] = _MIN_LOG_MEL + np.log(hz[log_region] / _MIN_LOG_HZ) / _LOGSTEP
    return mel


def _mel_to_hz(mel: NDArray[np.float64]) -> NDArray[np.float64]:
    hz = mel * _F_SP
    log_region = mel >= _MIN_LOG_MEL
    hz[log_region] = _MIN_LOG_HZ * np.exp(_LOGSTEP * (mel[log_region] - _MIN_LOG_MEL))
    return hz


@functools.lru_cache(maxsize=8)
def mel_filters(
    n_mels: int = 80, sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT
) -> NDArray[np.float32]:
    """Triangular mel filterbank with Slaney scale and Slaney area normalisation.

    Equal to ``librosa.filters.mel(sr=sample_rate, n_fft=n_fft, n_mels=n_mels)``, which is
    what Whisper was trained with. Cached per arguments, so the result is read-only.

    Args:
        n_mels: Number of mel bands.
        sample_rate: Sampling rate in Hz; the filters span 0 to sample_rate / 2.
        n_fft: FFT size; the filters cover its n_fft // 2 + 1 non-negative bins.

    Returns:
        float32 array of shape [n_mels, n_fft // 2 + 1].
    """
    if n_mels <= 0 or sample_rate <= 0 or n_fft <= 0:
        raise ValueError(f"invalid filterbank: {n_mels=}, {sample_rate=}, {n_fft=}")
    # Built in float64 and rounded once at the end, as librosa does.
    fft_hz = np.fft.rfftfreq(n_fft, d=1.0 / sample_rate)
    edges_mel = np.linspace(0.0, _hz_to_mel(np.array([sample_rate / 2.0]))[0], n_mels + 2)
    edges_hz = _mel_to_hz(edges_mel)

    widths = np.diff(edges_hz)
    # offsets[i, k]: distance from band edge i up to FFT bin k.
    offsets = fft_hz[np.newaxis, :] - edges_hz[:, np.newaxis]
    rising = offsets[:-2] / widths[:-1, np.newaxis]
    falling = -offsets[2:] / widths[1:, np.newaxis]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    # Area normalisation: every triangle gets unit area in Hz, so wide high bands do not
    # dominate the energy.
    weights *= (2.0 / (edges_hz[2:] - edges_hz[:-2]))[:, np.newaxis]

    result = weights.astype(np.float32)
    result.flags.writeable = False  # shared by every caller through the cache
    return result


@functools.lru_cache(maxsize=4)
def _hann_window(n_fft: int) -> NDArray[np.float32]:
    # Periodic Hann (torch.hann_window default): the symmetric n_fft + 1 window minus its
    # last point, so overlapping frames sum to a constant.
    window = np.hanning(n_fft + 1)[:-1].astype(np.float32)
    window.flags.writeable = False
    return window


def log_mel_spectrogram(
    audio: NDArray[np.float32], n_mels: int = 80, padding: int = 0
) -> NDArray[np.float32]:
    """Whisper's normalised log-mel spectrogram of 16 kHz mono audio.

    STFT with N_FFT = 400 and HOP_LENGTH = 160, centred with reflect padding, power
    spectrum without the final frame, mel projection, then log10 clamped to 8 decades
    below the peak and scaled by (x + 4) / 4, as in ``whisper.audio.log_mel_spectrogram``.

    Args:
        audio: Mono samples at 16 kHz in [-1, 1]; converted to float32 if needed.
        n_mels: Number of mel bands (80, or 128 for large-v3).
        padding: Zero samples appended before the transform (Whisper pads 30 s of silence).

    Returns:
        float32 array of shape [n_mels, (len(audio) + padding) // HOP_LENGTH].

    Raises:
        ValueError: If audio is not one-dimensional or padding is negative.
    """
    samples = np.asarray(audio, dtype=np.float32)
    if samples.ndim != 1:
        raise ValueError(f"expected mono audio of shape [n], got shape {samples.shape}")
    if padding < 0:
        raise ValueError(f"padding must be >= 0, got {padding}")
    n_frames = (samples.shape[0] + padding) // HOP_LENGTH
    if n_frames == 0:
        # The only STFT frame would be the one Whisper drops.
        return np.zeros((n_mels, 0), dtype=np.float32)

    # Frames lying wholly in the zero padding all come out as the clamp floor, so only the
    # first N_FFT samples of padding are transformed and the rest is filled in: the same
    # result for a fraction of the work when seconds of silence are appended.
    tail = min(padding, N_FFT)
    if tail:
        samples = np.concatenate([samples, np.zeros(tail, dtype=np.float32)])
    computed = min(n_frames, (samples.shape[0]) // HOP_LENGTH)
    log_spec = _log_mel(samples, n_mels, computed)
    if computed < n_frames:
        floor = max(float(log_spec.max()) - 2.0, -1.5)  # (max(peak - 8, -10) + 4) / 4
        filler = np.full((n_mels, n_frames - computed), floor, dtype=np.float32)
        log_spec = np.concatenate([log_spec, filler], axis=1)
    return log_spec


def _log_mel(samples: NDArray[np.float32], n_mels: int, n_frames: int) -> NDArray[np.float32]:
    half = N_FFT // 2
    padded = np.pad(samples, half, mode="reflect")

    # Zero-copy view of overlapping frames; only the first n_frames are needed because
    # Whisper discards the last STFT frame, so it is never computed.
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP_LENGTH][:n_frames]
    # numpy >= 2 keeps float32 input in single precision (complex64 output), which is
    # what Whisper's torch pipeline does too.
    spectrum = np.fft.rfft(frames * _hann_window(N_FFT), axis=-1)
    # |z|^2 from the parts directly: cheaper than np.abs (a sqrt) followed by squaring.
    power = np.square(spectrum.real)
    power += np.square(spectrum.imag)

    mel = mel_filters(n_mels, SAMPLE_RATE, N_FFT) @ power.T
    log_spec = np.log10(np.maximum(mel, np.float32(1e-10)))
    np.maximum(log_spec, log_spec.max() - np.float32(8.0), out=log_spec)
    log_spec += np.float32(4.0)
    log_spec /= np.float32(4.0)
    return log_spec.astype(np.float32, copy=False)
