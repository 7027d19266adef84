"""Decode audio files to 16 kHz mono float32, the input every recogniser here expects.

Files are read with libsndfile (through soundfile), whose wheels carry WAV, FLAC, OGG
Vorbis/Opus and MP3 decoders, and resampled by a band-limited polyphase filter in plain
numpy, so decoding needs neither ffmpeg nor scipy.
"""

from __future__ import annotations

import functools
import math
import os
import stat
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.errors import BadInputError, NotFoundError, VoxtrayError

# Resampling filter. The cutoff (-6 dB) sits at the lower Nyquist frequency and the Kaiser
# window rolls the response off symmetrically around it: with 64 zero crossings a side the
# transition band is about +-4% of Nyquist (7.69-8.31 kHz for a 16 kHz output). Aliases
# from inside it fold back into it only, so the passband stays clean, and the stopband is
# at least 80 dB down. A cutoff fraction below 1 would cost the top of the speech band
# (0.95 puts 7.9 kHz at -7 dB) for no gain in the passband.
_ROLLOFF = 1.0
_ZERO_CROSSINGS = 64
_KAISER_BETA = 8.0  # about 80 dB of stopband attenuation

# Input samples per matrix-product block (4 MiB). Few, large products matter more than
# cache fit: OpenBLAS synchronises its threads once per product, and on a busy 2-core
# machine small blocks made 10 minutes of 44.1 kHz audio take seconds instead of 0.2 s.
_BLOCK_SAMPLES = 1 << 20
# Above this many filter coefficients (odd rate pairs such as 44 099 -> 16 000 Hz) the dense
# plan would waste memory, so each filter phase runs on its own instead.
_MAX_DENSE_TAPS = 1 << 22

# libsndfile's public error codes (sndfile.h) and SFE_BAD_FILE, which its MP3 reader
# returns for a cut-off stream with a misleading "not a regular file" text.
_OPEN_REASONS = {
    1: "not a recognised audio file",
    2: "cannot read the file",
    3: "malformed or truncated audio file",
    4: "unsupported audio encoding",
    7: "malformed or truncated audio file",
}


MIN_RATE, MAX_RATE = 1000, 384000
_MAX_PHASES = 1000
_READ_BLOCK_BYTES = 4 << 20  # float32 samples of all channels in one read
_UNKNOWN_FRAMES = 2**62  # libsndfile's frame count for a stream of unknown length: 2**63 - 1


class AudioTooLongError(BadInputError):
    """Decoding passed the caller's limit on duration; nothing more was decoded."""

    def __init__(self, path: Path, limit_s: float) -> None:
        super().__init__(f"{path}: longer than {limit_s:.0f} s")
        self.limit_s = limit_s


@dataclass(frozen=True)
class DecodeLimits:
    """What a caller that decodes untrusted files (the server) allows."""

    max_seconds: float | None = None
    max_rate: int = MAX_RATE


def load_audio(
    path: Path, sample_rate: int = SAMPLE_RATE, limits: DecodeLimits = DecodeLimits()
) -> NDArray[np.float32]:
    """Decode an audio file to mono float32 samples at ``sample_rate``.

    Any format libsndfile reads (WAV, FLAC, OGG Vorbis/Opus, MP3, ...) at any sampling
    rate and channel count is accepted. Channels are averaged, the result is resampled
    with :func:`resample` and clipped to [-1, 1]. A WAV file whose header promises more
    data than it holds (a recording that was cut off) yields the samples that are there.

    Args:
        path: The audio file.
        sample_rate: Output sampling rate in Hz.
        limits: The highest source rate, checked before decoding, and the longest
            duration, checked as blocks are decoded.

    Returns:
        1-D float32 array of samples in [-1, 1].

    Raises:
        NotFoundError: The file does not exist.
        BadInputError: The path is a directory, unreadable, empty, not audio, corrupt,
            truncated inside its header, or holds no samples.
        AudioTooLongError: The audio is longer than ``limits.max_seconds``.
    """
    if sample_rate <= 0:
        raise ValueError(f"sample rate must be positive, got {sample_rate}")
    _check_readable(path)
    mono, source_rate = _read_mono(path, limits)
    if not np.isfinite(mono).all():
        # Float WAVs can carry NaN or inf; one of them would poison every window it touches.
        mono = np.nan_to_num(mono, nan=0.0, posinf=1.0, neginf=-1.0)
    audio = resample(mono, _tame_rate(source_rate, sample_rate), sample_rate)
    # Lossy decoders and the filter's ripple overshoot full scale a little.
    return np.clip(audio, -1.0, 1.0, out=audio)


def _tame_rate(source: int, target: int) -> int:
    """A source rate whose ratio to `target` reduces to small integers.

    An odd rate (383 999 Hz) would make the polyphase filter and its design enormous; the
    nearest multiple of 100 Hz (10 Hz below 10 kHz) changes pitch by less than 0.5 %.
    """
    ratio = Fraction(target, source)
    if max(ratio.numerator, ratio.denominator) <= _MAX_PHASES:
        return source
    step = 100 if source >= 10_000 else 10
    return max(step, round(source / step) * step)


def _check_readable(path: Path) -> None:
    """Turn a missing, directory, unreadable or empty path into a one-line error.

    libsndfile would report most of these as "Format not recognised" or "System error".
    """
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise BadInputError(f"{path}: is a directory")
        if not stat.S_ISREG(mode):
            # A pipe or device could block the read forever or never end.
            raise BadInputError(f"{path}: not a regular file")
        with path.open("rb") as stream:
            empty = not stream.read(1)
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise _os_error(path, exc) from None
    if empty:
        raise BadInputError(f"{path}: empty file")


def _os_error(path: Path, exc: OSError) -> BadInputError:
    if isinstance(exc, PermissionError):
        return BadInputError(f"{path}: permission denied")
    return BadInputError(f"{path}: cannot read the file ({exc.strerror or type(exc).__name__})")


def _native_name(path: Path) -> str | bytes:
    # soundfile encodes a str name strictly, which fails for a name that is not valid UTF-8
    # (its bytes kept as lone surrogates); the name's own bytes always open.
    return str(path) if sys.platform == "win32" else os.fsencode(path)


def _soundfile() -> Any:
    # Imported on first read: the tray imports this module for `resample` and never
    # reads a file, and libsndfile with cffi costs ~2 MB of memory there.
    # soundfile has inline hints but no py.typed marker; `unused-ignore` keeps this valid
    # whether or not mypy sees them.
    import soundfile  # type: ignore[import-untyped, unused-ignore]

    return soundfile


def _read_mono(path: Path, limits: DecodeLimits) -> tuple[NDArray[np.float32], int]:
    """All frames of ``path`` averaged over channels, and the file's sampling rate."""
    soundfile = _soundfile()
    try:
        sound = soundfile.SoundFile(_native_name(path))
    except (soundfile.SoundFileError, RuntimeError) as exc:
        raise _open_error(path, exc) from None
    except OSError as exc:
        raise _os_error(path, exc) from None
    with sound:
        rate = int(sound.samplerate)
        if not MIN_RATE <= rate <= MAX_RATE:
            # A header is not to be trusted: a 1 Hz file would expand 16000-fold.
            raise BadInputError(f"{path}: implausible sampling rate {rate} Hz")
        if rate > limits.max_rate:
            raise BadInputError(
                f"{path}: sampling rate {rate} Hz is above the limit of {limits.max_rate} Hz"
            )
        most = None if limits.max_seconds is None else int(limits.max_seconds * rate)
        mono = _read_blocks(path, sound, most)
    if mono.size == 0:
        raise BadInputError(f"{path}: no audio samples")
    return mono, rate


def _read_blocks(path: Path, sound: Any, most: int | None) -> NDArray[np.float32]:
    """Read until the end of the data rather than trusting the header's frame count,
    which a damaged MP3 can set to billions (or a streamed FLAC leaves unknown), in
    blocks of bounded size however many channels, and no further than `most` frames."""
    if int(sound.frames) >= _UNKNOWN_FRAMES:
        return _read_unknown_length(path, int(sound.channels), most)
    soundfile = _soundfile()
    blocks = []
    frames = _block_frames(int(sound.channels))
    read = 0
    try:
        while True:
            block = np.asarray(
                sound.read(frames, dtype="float32", always_2d=True), dtype=np.float32
            )
            if block.shape[0] == 0:
                break
            read += block.shape[0]
            if most is not None and read > most:
                raise AudioTooLongError(path, most / int(sound.samplerate))
            blocks.append(_downmix(block))
    except (soundfile.SoundFileError, RuntimeError) as exc:
        raise BadInputError(
            f"{path}: corrupt or truncated audio ({_libsndfile_text(exc)})"
        ) from None
    except MemoryError:
        raise BadInputError(f"{path}: too large to decode") from None
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)


def _block_frames(channels: int) -> int:
    return max(1, _READ_BLOCK_BYTES // (4 * max(1, channels)))


def _read_unknown_length(path: Path, channels: int, most: int | None) -> NDArray[np.float32]:
    """A stream whose header leaves its length unknown (a FLAC written as it was
    recorded): libsndfile fails the read that passes its end, dropping that block, so
    the file is read again from there in ever smaller blocks (one frame lost at most)."""
    soundfile = _soundfile()
    blocks: list[NDArray[np.float32]] = []
    read, size = 0, _block_frames(channels)
    while size >= 1:
        try:
            with soundfile.SoundFile(_native_name(path)) as sound:
                sound.seek(read)
                while (block := sound.read(size, dtype="float32", always_2d=True)).shape[0]:
                    read += block.shape[0]
                    if most is not None and read > most:
                        raise AudioTooLongError(path, most / int(sound.samplerate))
                    blocks.append(_downmix(np.asarray(block, dtype=np.float32)))
                break
        except (soundfile.SoundFileError, RuntimeError):
            size //= 16
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)


def _downmix(frames: NDArray[np.float32]) -> NDArray[np.float32]:
    """Mean over channels of a [frames, channels] array."""
    # Column by column: numpy's reduction along a short last axis is several times slower.
    mono = np.array(frames[:, 0], dtype=np.float32)
    channels = frames.shape[1]
    if channels > 1:
        for channel in range(1, channels):
            mono += frames[:, channel]
        mono *= np.float32(1.0 / channels)
    return mono


def _open_error(path: Path, exc: Exception) -> VoxtrayError:
    code = getattr(exc, "code", None)
    reason = _OPEN_REASONS.get(code) if isinstance(code, int) else None
    if reason is None:
        reason = f"malformed or truncated audio file ({_libsndfile_text(exc)})"
    return BadInputError(f"{path}: {reason}")


def _libsndfile_text(exc: Exception) -> str:
    """libsndfile's own one-line reason, without its "Error : " prefix and final stop."""
    text = getattr(exc, "error_string", None)
    if not isinstance(text, str):
        text = str(exc)
    text = " ".join(text.split())
    return text.removeprefix("Error : ").rstrip(".") or exc.__class__.__name__


def resample(audio: NDArray[np.float32], source_rate: int, target_rate: int) -> NDArray[np.float32]:
    """Change the sampling rate of a mono signal with a band-limited polyphase filter.

    The rate ratio is reduced to ``up / down``; each output sample is the dot product of
    the input around its position with one phase of a Kaiser-windowed sinc low-pass whose
    cutoff is half the lower of the two rates. The output starts at the same instant as
    the input and has ``round(len(audio) * target_rate / source_rate)`` samples.

    Args:
        audio: 1-D float32 samples.
        source_rate: Sampling rate of ``audio`` in Hz.
        target_rate: Wanted sampling rate in Hz.

    Returns:
        1-D float32 array; ``audio`` itself when the rates are equal.
    """
    if source_rate <= 0 or target_rate <= 0:
        raise ValueError(f"sampling rates must be positive: {source_rate} -> {target_rate}")
    signal = np.asarray(audio, dtype=np.float32)
    if signal.ndim != 1:
        raise ValueError(f"expected mono audio of shape [samples], got {signal.shape}")
    if source_rate == target_rate:
        return signal
    common = math.gcd(source_rate, target_rate)
    up, down = target_rate // common, source_rate // common
    length = round(signal.size * up / down)
    if length == 0:
        return np.zeros(0, dtype=np.float32)
    plan = _plan(up, down)
    if plan.dense is not None:
        return _apply_dense(signal, plan, length)
    return _apply_phases(signal, plan, length)


@dataclass(frozen=True)
class _Plan:
    """How to compute ``up`` outputs from ``down`` inputs, repeated along the signal.

    Output ``n`` reads the ``width`` inputs ending at ``newest[n % up] + (n // up) * down``
    (before the left padding), weighted by ``phases[phase[n % up]]``.
    """

    up: int
    down: int
    width: int
    newest: NDArray[np.int64]
    phase: NDArray[np.int64]
    phases: NDArray[np.float32]  # [up, width], oldest input first
    # Dense form: a step of `step_out` outputs is `sum_m rows[j + m] @ dense[m]`, where
    # rows are consecutive `step_in`-sample slices of the input starting at `first`.
    dense: NDArray[np.float32] | None
    first: int
    step_in: int
    step_out: int


@functools.lru_cache(maxsize=8)
def _plan(up: int, down: int) -> _Plan:
    phases = _design_phases(up, down)
    width = phases.shape[1]
    # Group steps so that one step reads at least a filter's width of input: the dense
    # products then have useful shapes even for small ratios such as 48 -> 16 kHz.
    group = max(1, -(-width // down))
    step_out, step_in = group * up, group * down
    # The prototype's centre lands on output 0, so output n is centred on input n*down/up.
    centre = width * up // 2
    position = np.arange(step_out, dtype=np.int64) * down + centre
    newest, phase = np.divmod(position, up)
    first = int(newest[0]) - width + 1
    span = int(newest[-1]) - first + 1
    blocks = -(-span // step_in)
    dense = None
    if blocks * step_in * step_out <= _MAX_DENSE_TAPS:
        dense = _dense_taps(phases, newest - first, phase, blocks * step_in)
        dense = dense.reshape(blocks, step_in, step_out)
        dense.flags.writeable = False  # cached and shared between calls
    phases.flags.writeable = False
    return _Plan(up, down, width, newest[:up], phase[:up], phases, dense, first, step_in, step_out)


def _design_phases(up: int, down: int) -> NDArray[np.float32]:
    """Kaiser-windowed sinc at ``up`` times the input rate, split into ``up`` phases."""
    stretch = max(up, down)
    # Zero crossings of the sinc fall every `stretch / _ROLLOFF` samples at the upsampled
    # rate, i.e. once per sample of the lower of the two rates.
    half = math.ceil(_ZERO_CROSSINGS * stretch / _ROLLOFF)
    width = -(-(2 * half + 1) // up)
    # Centre the prototype in `width * up` taps so every phase has the same width.
    t = np.arange(width * up, dtype=np.float64) - width * up // 2
    cutoff = _ROLLOFF / (2.0 * stretch)  # cycles per upsampled sample
    window = np.kaiser(2 * half + 1, _KAISER_BETA)
    taps = 2.0 * cutoff * np.sinc(2.0 * cutoff * t)
    inside = np.abs(t) <= half
    taps[inside] *= window[(t[inside] + half).astype(np.int64)]
    taps[~inside] = 0.0
    # Zero stuffing divides the level by `up`; this gives unit gain at DC.
    taps *= up / taps.sum()
    # Phase p weights input newest - i with tap p + i*up; store oldest input first.
    return np.ascontiguousarray(taps.reshape(width, up).T[:, ::-1], dtype=np.float32)


def _dense_taps(
    phases: NDArray[np.float32],
    offset: NDArray[np.int64],
    phase: NDArray[np.int64],
    rows: int,
) -> NDArray[np.float32]:
    """[rows, outputs] matrix: column r holds phase[r]'s taps ending at row offset[r]."""
    width = phases.shape[1]
    dense = np.zeros((rows, offset.size), dtype=np.float32)
    row = offset[None, :] - width + 1 + np.arange(width)[:, None]
    column = np.broadcast_to(np.arange(offset.size), row.shape)
    dense[row, column] = phases[phase].T
    return dense


def _padded(signal: NDArray[np.float32], left: int, total: int) -> NDArray[np.float32]:
    """``signal`` with ``left`` zeros before it and zeros after it up to ``total``."""
    out = np.zeros(max(total, left + signal.size), dtype=np.float32)
    out[left : left + signal.size] = signal
    return out


def _apply_dense(signal: NDArray[np.float32], plan: _Plan, length: int) -> NDArray[np.float32]:
    """All phases at once: a few matrix products per block of steps."""
    assert plan.dense is not None
    blocks, step_in, step_out = plan.dense.shape
    steps = -(-length // step_out)
    left = max(0, -plan.first)
    start = left + plan.first
    rows_needed = steps + blocks - 1
    padded = _padded(signal, left, start + rows_needed * step_in)
    rows = padded[start : start + rows_needed * step_in].reshape(rows_needed, step_in)
    out = np.empty((steps, step_out), dtype=np.float32)
    chunk = max(1, _BLOCK_SAMPLES // step_in)
    scratch = np.empty((min(chunk, steps), step_out), dtype=np.float32)
    for j in range(0, steps, chunk):
        stop = min(steps, j + chunk)
        np.matmul(rows[j:stop], plan.dense[0], out=out[j:stop])
        for m in range(1, blocks):
            np.matmul(rows[j + m : stop + m], plan.dense[m], out=scratch[: stop - j])
            out[j:stop] += scratch[: stop - j]
    return out.reshape(-1)[:length]


def _apply_phases(signal: NDArray[np.float32], plan: _Plan, length: int) -> NDArray[np.float32]:
    """One phase at a time, for rate pairs whose dense matrix would be too large."""
    width = plan.width
    steps = -(-length // plan.up)
    left = width - 1
    last = left + int(plan.newest.max()) + (steps - 1) * plan.down + 1
    padded = _padded(signal, left, last)
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)
    out = np.zeros((steps, plan.up), dtype=np.float32)
    for r in range(plan.up):
        count = len(range(r, length, plan.up))
        newest = int(plan.newest[r])
        rows = windows[newest : newest + count * plan.down : plan.down]
        out[:count, r] = rows @ plan.phases[plan.phase[r]]
    return out.reshape(-1)[:length]
