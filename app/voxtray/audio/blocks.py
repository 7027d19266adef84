"""Per-block helpers for the capture thread: the level meter, the pre-roll ring and a
streaming resampler equal to resampling the whole recording at once."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from voxtray.audio.decode import resample

LEVEL_FLOOR_DB = -100.0
"""The level reported for digital silence, and before the first block arrives."""

# decode.resample's filter reaches 64 zero crossings either side of each output; 96 keeps
# every output the streaming resampler emits clear of the zeros padded past its buffer.
_RESAMPLE_CONTEXT_ZERO_CROSSINGS = 96


def level_dbfs(block: NDArray[np.float32]) -> float:
    """RMS level of a block in dB relative to full scale (a full-scale square wave is 0 dB).

    Args:
        block: Samples in [-1, 1].

    Returns:
        The level, never below :data:`LEVEL_FLOOR_DB`.
    """
    if block.size == 0:
        return LEVEL_FLOOR_DB
    mean_square = float(np.dot(block, block)) / block.size
    if mean_square <= 0.0:
        return LEVEL_FLOOR_DB
    return max(LEVEL_FLOOR_DB, 10.0 * math.log10(mean_square))


class Ring:
    """The last ``size`` samples pushed, in a fixed array."""

    def __init__(self, size: int) -> None:
        self._buffer = np.zeros(size, dtype=np.float32)
        self._end = 0
        self._filled = 0

    def push(self, block: NDArray[np.float32]) -> None:
        size = self._buffer.size
        if size == 0 or block.size == 0:
            return
        block = block[-size:]
        first = min(block.size, size - self._end)
        self._buffer[self._end : self._end + first] = block[:first]
        self._buffer[: block.size - first] = block[first:]
        self._end = (self._end + block.size) % size
        self._filled = min(size, self._filled + block.size)

    def take(self) -> NDArray[np.float32]:
        """The contents, oldest first; the ring is empty afterwards."""
        start = self._end - self._filled
        if start >= 0:
            contents = self._buffer[start : self._end].copy()
        else:
            contents = np.concatenate((self._buffer[start:], self._buffer[: self._end]))
        self.clear()
        return contents

    def clear(self) -> None:
        self._end = 0
        self._filled = 0


class StreamResampler:
    """:func:`resample` applied block by block, equal to resampling the whole stream.

    Each call resamples the unconsumed input plus enough history and emits only the outputs
    whose filter lies entirely within it; the buffer always starts on a multiple of
    ``down`` input samples so its outputs fall on the global output grid.
    """

    def __init__(self, source_rate: int, target_rate: int) -> None:
        common = math.gcd(source_rate, target_rate)
        self.source_rate, self.target_rate = source_rate, target_rate
        self._up, self._down = target_rate // common, source_rate // common
        self._context = math.ceil(
            _RESAMPLE_CONTEXT_ZERO_CROSSINGS * max(self._up, self._down) / self._up
        )
        self._buffer = np.zeros(0, dtype=np.float32)
        self._start = 0  # global input index of _buffer[0]
        self._produced = 0  # global output index of the next output

    def __call__(self, block: NDArray[np.float32]) -> NDArray[np.float32]:
        buffer = np.concatenate((self._buffer, block))
        end = self._start + buffer.size
        ready = max(0, (end - self._context) * self._up // self._down)
        if ready <= self._produced:
            self._buffer = buffer
            return np.zeros(0, dtype=np.float32)
        base = self._start * self._up // self._down
        out = resample(buffer, self.source_rate, self.target_rate)
        result = out[self._produced - base : ready - base]
        self._produced = ready
        needed = self._produced * self._down // self._up - self._context
        keep_from = max(self._start, needed // self._down * self._down)
        self._buffer = buffer[keep_from - self._start :]
        self._start = keep_from
        return result
