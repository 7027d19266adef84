"""What one clean-up produced: the raw text, the model's answer, whether it was taken and
why not, and how long each part took."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Reason(enum.StrEnum):
    """Why the text that was delivered is what it is; the value is what history keeps."""

    ACCEPTED = "accepted"
    # Nothing was sent.
    NOTHING_TO_CLEAN = "nothing-to-clean"
    NO_CONSENT = "no-consent"
    BAD_ENDPOINT = "bad-endpoint"
    TOO_LONG_TO_SEND = "too-long-to-send"
    BUSY = "busy"
    # Sent, and no usable answer in time.
    LATE = "late"
    NO_ANSWER = "no-answer"
    UNREACHABLE = "unreachable"
    SERVER_ERROR = "server-error"
    NOT_AN_ANSWER = "not-an-answer"
    # An answer the guard refused.
    EMPTY = "empty"
    TOO_LONG = "too-long"
    ANSWERED = "answered"
    PROMPT = "prompt"
    WORDS_DROPPED = "words-dropped"
    WORDS_ADDED = "words-added"

    @property
    def by_guard(self) -> bool:
        """The answer came back and the guard refused it."""
        return self in _GUARD_REASONS


_GUARD_REASONS = frozenset(
    {
        Reason.EMPTY,
        Reason.TOO_LONG,
        Reason.ANSWERED,
        Reason.PROMPT,
        Reason.WORDS_DROPPED,
        Reason.WORDS_ADDED,
    }
)


@dataclass(frozen=True)
class Timings:
    """Milliseconds. `cleanup_ms` is what the dictation waited (the HUD's clean-up stage);
    `round_trip_ms` the request from its start to the whole answer and `guard_ms` the
    guard's check, each None when that step did not happen (or had not by the budget)."""

    cleanup_ms: float
    round_trip_ms: float | None = None
    guard_ms: float | None = None

    def stages(self) -> dict[str, float]:
        """The timings as utterance stages: `cleanup`, `cleanup_round_trip`, `cleanup_guard`."""
        stages = {"cleanup": round(self.cleanup_ms, 2)}
        if self.round_trip_ms is not None:
            stages["cleanup_round_trip"] = round(self.round_trip_ms, 2)
        if self.guard_ms is not None:
            stages["cleanup_guard"] = round(self.guard_ms, 3)
        return stages


@dataclass(frozen=True)
class CleanupOutcome:
    """One clean-up. `text` is what to deliver: the cleaned text when accepted, else the
    raw text, whole. `cleaned` is the model's answer (kept for history even when refused),
    None when none came. `late` marks an answer that arrived after the budget: it goes to
    history, never to the window. `detail` says in one line why, without the text."""

    raw: str
    cleaned: str | None
    accepted: bool
    reason: Reason
    detail: str
    timings: Timings
    late: bool = False
    host: str = ""
    model: str = ""

    @property
    def text(self) -> str:
        return self.cleaned if self.accepted and self.cleaned is not None else self.raw

    def summary(self) -> str:
        """One line for the HUD and history: "cleaned up in 420 ms" or why not."""
        took = f"{self.timings.cleanup_ms:.0f} ms"
        if self.accepted:
            return f"cleaned up in {took}" if not self.late else "cleaned up late (kept in history)"
        return f"raw text: {self.detail}"
