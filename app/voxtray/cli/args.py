"""argparse value types whose ranges are checked while the command line is parsed, so an
out-of-range number is a usage error (exit 2) before any slow work; and the one way
results are printed as JSON."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from voxtray.choices import Choice
from voxtray.settings_schema import SCHEMA, Key, int_bounds, max_threads
from voxtray.settings_schema import default_threads as default_threads

C = TypeVar("C", bound=Choice)

if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]
    """What each command module's `register` adds its parser to."""

MAX_RUNS = 1000
MAX_GPU_INDEX = int_bounds(Key.GPU_INDEX)[1]


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
    low = int_bounds(Key.THREADS)[0]
    return int_range(low, max_threads, " (the CPUs on this machine)")


def setting_number(key: Key) -> Callable[[str], float]:
    """An argparse `type=` for a number in the range of setting `key`."""
    spec = SCHEMA[key]

    def parse(value: str) -> float:
        low, top = spec.low, spec.top()
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and (low is None or number >= low)) or (
            top is not None and number > top
        ):
            raise argparse.ArgumentTypeError(
                f"{value!r} is not a number from {low:g} to {top:g}{spec.unit and ' ' + spec.unit}"
            )
        return number

    return parse


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


def add_model_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default=None, type=model_name, help="catalog name (default: the default model)"
    )


def parse_choice(kind: type[C]) -> Callable[[str], C]:
    """An argparse `type=` that gives the member, with argparse's own invalid-choice words."""

    def parse(value: str) -> C:
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(repr(v) for v in kind.values())
            raise argparse.ArgumentTypeError(
                f"invalid choice: {value!r} (choose from {allowed})"
            ) from None

    return parse


def parse_choices(kind: type[C]) -> Callable[[str], list[C]]:
    """An argparse `type=` for a comma-separated list of members (empty items skipped)."""
    parse_one = parse_choice(kind)

    def parse(value: str) -> list[C]:
        chosen = [parse_one(item) for item in value.split(",") if item]
        if not chosen:
            allowed = ", ".join(repr(v) for v in kind.values())
            raise argparse.ArgumentTypeError(f"name at least one (choose from {allowed})")
        return chosen

    return parse


def add_choice(
    parser: argparse.ArgumentParser, flag: str, default: Choice, help: str | None = None
) -> None:
    kind = type(default)
    parser.add_argument(
        flag, default=default, type=parse_choice(kind), choices=kind.values(), help=help
    )


def name_list(value: str) -> list[str]:
    return [name for name in value.split(",") if name]
