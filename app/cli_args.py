"""argparse value types whose ranges are checked while the command line is parsed, so an
out-of-range number is a usage error (exit 2) before any slow work."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

MAX_RUNS = 1000
MAX_GPU_INDEX = 255


def int_range(low: int, high: int | Callable[[], int], what: str = "") -> Callable[[str], int]:
    """An argparse `type=` for an integer from `low` to `high` (or `high()`), both included."""

    def parse(value: str) -> int:
        top = high if isinstance(high, int) else high()
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or not low <= number <= top:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not a whole number from {low} to {top}{what}"
            )
        return number

    return parse


def thread_count() -> Callable[[str], int]:
    """`--threads`: 1 to the CPUs on this machine, the rule of the `threads` setting."""
    from app.config import max_threads

    return int_range(1, max_threads, " (the CPUs on this machine)")


def default_threads() -> int:
    """Two, or one on a single-CPU machine."""
    from app.config import max_threads

    return min(2, max_threads())


def positive_seconds(value: str) -> float:
    """A finite number of seconds above 0."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds above 0")
    return seconds


def model_name(value: str) -> str:
    """A catalog name; an empty one would silently mean the default model."""
    if not value.strip():
        raise argparse.ArgumentTypeError("a model name cannot be empty")
    return value
