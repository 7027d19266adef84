"""What greedy Whisper decoding computes over one step's scores, and the word set a
transcript is compared by."""

from __future__ import annotations

import math
import re

import numpy as np
from numpy.typing import NDArray

from voxtray.inference.textguards import RUNAWAY_REPEATS


def words(text: str) -> set[str]:
    return set(re.findall(r"[\w']+", text.casefold()))


def logsumexp(x: NDArray[np.float32]) -> float:
    peak = float(x.max())
    return peak + math.log(float(np.exp(x - peak).sum()))


def softmax_at(logits: NDArray[np.float32], index: int) -> float:
    return math.exp(float(logits[index]) - logsumexp(logits))


def runaway_tail(tokens: list[int]) -> int | None:
    """If the tail is one n-gram (n <= 8) repeated RUNAWAY_REPEATS times back to back,
    the n; a decoding loop, not speech."""
    for n in range(1, 9):
        span = n * RUNAWAY_REPEATS
        if len(tokens) < span:
            return None
        tail = tokens[-span:]
        if all(tail[i] == tail[i % n] for i in range(span)):
            return n
    return None
