"""What getting a model ready reports as it goes: the step, what it acts on, and how far.

The store and the assembly emit these facts; each front end words them for people.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass


class InstallStep(enum.Enum):
    DOWNLOADING = enum.auto()
    UNPACKING = enum.auto()
    CONVERTING = enum.auto()
    INSTALLED = enum.auto()
    LOADING = enum.auto()
    """Opening an installed model."""
    WARMING_UP = enum.auto()


INSTALLING = frozenset({InstallStep.DOWNLOADING, InstallStep.UNPACKING, InstallStep.CONVERTING})
"""The steps of an install still under way; loading an installed model takes none of them."""


@dataclass(frozen=True)
class InstallProgress:
    step: InstallStep
    detail: str = ""
    """The file being downloaded, or the conversion's own step."""
    done: int = 0
    total: int | None = None
    """None when not known (a download whose size the server does not say)."""

    @property
    def installing(self) -> bool:
        return self.step in INSTALLING

    def said(self) -> str:
        """The step in plain words, as every front end shows it: "downloading model.onnx"."""
        match self.step:
            case InstallStep.DOWNLOADING:
                return f"downloading {self.detail}"
            case InstallStep.CONVERTING:
                return f"converting: {self.detail}"
            case InstallStep.LOADING:
                return "loading model"
            case InstallStep.WARMING_UP:
                return "warming up"
            case _:
                return self.step.name.lower()


ProgressFn = Callable[[InstallProgress], None]


def ignore_progress(_progress: InstallProgress) -> None:
    """A `ProgressFn` for when nobody watches."""
