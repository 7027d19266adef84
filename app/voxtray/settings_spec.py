"""What a setting is: `Spec`, the definition of one setting and its value check, the
settings window's `Section`s and what a change `Applies` to. The settings themselves, one
`Spec` each, are the members of `voxtray.settings_schema.Key`.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from voxtray.choices import Choice
from voxtray.settings_checks import shown

T = TypeVar("T", covariant=True)


class Section(enum.StrEnum):
    """The settings window's pages, in the order its sidebar lists them."""

    GENERAL = "General"
    MICROPHONE = "Microphone"
    MODEL = "Model"
    OUTPUT = "Output"
    WORDS = "Words"
    REMOTE = "Remote"
    CLEANUP = "Clean-up"
    MODES = "Modes"
    HISTORY = "History & privacy"
    ADVANCED = "Advanced"


class Applies(enum.Enum):
    """What a change of the setting restarts."""

    AT_ONCE = "at once"
    RELOAD = "reloads the model"  # the model, the microphone and the output are reopened
    HOTKEY = "restarts the hotkey listener"


def max_threads() -> int:
    """The most inference threads a setting may ask for on this machine."""
    return os.cpu_count() or 1


def default_threads() -> int:
    # Two threads is the default, but a single-core machine must still get valid defaults.
    return min(2, max_threads())


class _FromDefault:
    """`Spec.kind` when not given: the JSON type of the default."""


@dataclass(frozen=True, eq=False, kw_only=True)
class Spec(Generic[T]):
    """One setting, given by keyword. `kind` is the JSON type, by default the default's
    (a `Choice` default makes a choice setting of its enum, `choices`); `low`/`high`
    bound numbers (`high` may be a function of the machine); `check` replaces the type
    and range test for values from an open-ended set; `refuse` says why a string of the
    right shape is still refused (a hotkey no keyboard has), and `allowed` what `check`
    or `refuse` takes, in words. `key` is the `Key` member that holds it."""

    default: T
    section: Section
    label: str  # with its mnemonic, "&Hotkey"
    help: str
    kind: type = _FromDefault
    applies: Applies = Applies.AT_ONCE
    choice_help: Mapping[str, str] = field(default_factory=dict)
    low: float | None = None
    high: float | Callable[[], float] | None = None
    unit: str = ""
    low_means: str = ""  # for a slider: what the low end does, in words
    high_means: str = ""
    empty_ok: bool = False
    check: Callable[[object], bool] | None = None
    refuse: Callable[[str], str | None] | None = None
    allowed: str = ""
    default_factory: Callable[[], T] | None = None
    key: enum.StrEnum = field(init=False)  # the `settings_schema.Key` member holding it

    def __post_init__(self) -> None:
        if self.kind is _FromDefault:
            kind = str if isinstance(self.default, str) else type(self.default)
            object.__setattr__(self, "kind", kind)

    @property
    def choices(self) -> type[Choice] | None:
        """The enum of a choice setting (its default's), else None."""
        return type(self.default) if isinstance(self.default, Choice) else None

    @property
    def reloads(self) -> bool:
        return self.applies is Applies.RELOAD

    def initial(self) -> T:
        return self.default_factory() if self.default_factory is not None else self.default

    def top(self) -> float | None:
        """The highest allowed number now (`high` may depend on the machine)."""
        return self.high() if callable(self.high) else self.high

    def problem(self, value: object) -> str | None:
        """Why `value` cannot be this setting, as "must be ... (got ...)"; None if it can.

        The file, the command line and the settings window all say this, after the name
        they know the setting by ("setting hotkey", "--vocabulary")."""
        if not self._accepts(value):
            return f"must be {self.allowed_words()} (got {shown(value)})"
        why = self.refuse(value) if self.refuse and isinstance(value, str) else None
        return f"must be {self.allowed} ({why})" if why else None

    def _accepts(self, value: object) -> bool:
        if self.check is not None:
            return self.check(value)
        if not _has_kind(value, self.kind):
            return False
        if isinstance(value, str):
            if self.choices is not None:
                return value in self.choices.values()
            return self.empty_ok or bool(value.strip())
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _in_range(value, self.low, self.top())
        return True

    def allowed_words(self) -> str:
        """What the setting takes, in words: "an integer from 100 to 3000"."""
        if self.check is not None:
            return self.allowed
        if self.choices is not None:
            return "one of " + ", ".join(self.choices.values())
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "a string" if self.empty_ok else "a non-empty string"
        noun = "a number" if self.kind is float else "an integer"
        top = self.top()
        if top is None:
            return f"{noun} >= {_fmt(self.low)}"
        return f"{noun} from {_fmt(self.low)} to {_fmt(top)}"


def _fmt(number: float | None) -> str:
    return f"{number:g}"


def _has_kind(value: object, kind: type) -> bool:
    # bool is an int subclass, but `true` is no thread count and `1` is no switch.
    if kind is bool or isinstance(value, bool):
        return kind is bool and isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _in_range(value: float, low: float | None, high: float | None) -> bool:
    # Only floats can be NaN; math.isfinite would overflow on a huge JSON integer.
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if low is not None and value < low:
        return False
    return high is None or value <= high
