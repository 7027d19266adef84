"""History rows as `Entry` values, read whatever a row holds.

A row another program or a damaged disk wrote may hold a date that is not a date, text as
bytes or not UTF-8, a duration that is text or infinite, a timing too large for a float.
Such a row is read with stand-ins for what cannot be read, and `Entry.damage` says what
that was; the other rows are not affected.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

# SQLite hands back whatever a column holds, whatever its declared type.
Value = int | float | str | bytes | None

# Longer than any recording; keeps seconds * 1000 (subtitle times) a finite float.
_MAX_AUDIO_S = 1e9


@dataclass(frozen=True)
class Entry:
    """One saved utterance."""

    id: int
    created_at: datetime | None
    """When it was added, timezone-aware UTC; None when the row's time is not a date."""
    text: str
    model: str
    engine: str
    provider: str
    audio_s: float
    timings: Mapping[str, float] = field(hash=False)
    """Stage name to seconds, as given to `History.add`."""
    delivered: bool
    delivery_error: str | None
    delivered_text: str | None = None
    """With a partial delivery: the start of `text` that reached `delivery_target`."""
    delivery_target: str | None = None
    """The window the text went to, when known; with a partial delivery the one that got
    `delivered_text`."""
    rerun_of: int | None = None
    """The entry whose kept audio was transcribed again to make this one."""
    recovered: bool = False
    """Recognised at start-up from a dictation that a quit or crash interrupted."""
    verified: str | None = None
    """What reading the field back found (`voxtray.output.verify.Outcome`); None: unchecked."""
    raw_text: str | None = None
    """With AI clean-up: the text as recognised (`text` is what was delivered)."""
    cleaned_text: str | None = None
    """With AI clean-up: the model's answer, taken or not, late or in time."""
    cleanup: str | None = None
    """With AI clean-up: its outcome, "reason: detail" (`voxtray.cleanup.Reason`)."""
    mode: str | None = None
    """The mode the window chose (`voxtray.modes`); None: the settings as they were."""
    damage: str | None = None
    """What in the stored row could not be read (the fields hold stand-ins); None: intact."""

    @property
    def partial(self) -> bool:
        """Whether only part of the text reached the window (the rest went elsewhere)."""
        return self.delivered_text is not None


@dataclass(frozen=True)
class Cleanup:
    """What AI clean-up made of a dictation, as history keeps it."""

    raw_text: str
    """The text as recognised."""
    cleaned_text: str | None
    """The model's answer, taken or not; None when none came."""
    outcome: str
    """"reason: detail" (`voxtray.cleanup.Reason` and its one line)."""

    def row(self) -> tuple[Value, Value, Value]:
        return (self.raw_text, self.cleaned_text, self.outcome)


class Undecodable(str):
    """Stored text that is not UTF-8, decoded with U+FFFD for the bytes that are not."""

    __slots__ = ()


def decode_text(raw: bytes) -> str:
    """The connection's text factory: never fails, marks what did not decode."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return Undecodable(raw.decode("utf-8", "replace"))


COLUMNS = (
    "id",
    "created_at",
    "text",
    "model",
    "engine",
    "provider",
    "audio_s",
    "timings_json",
    "delivered",
    "delivery_error",
    "delivered_text",
    "delivery_target",
    "rerun_of",
    "recovered",
    "verified",
    "raw_text",
    "cleaned_text",
    "cleanup",
    "mode",
)


class _Reader:
    """Reads one row's values, noting each that needed a stand-in."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def text(self, value: Value, what: str, *, required: bool = True) -> str | None:
        if value is None:
            if required:
                self.problems.append(f"no {what}")
                return ""
            return None
        if isinstance(value, Undecodable):
            self.problems.append(f"{what} is not UTF-8")
            return str(value)
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            self.problems.append(f"{what} is stored as bytes")
            return decode_text(value)
        self.problems.append(f"{what} is stored as a number")
        return str(value)

    def time(self, value: Value) -> datetime | None:
        try:
            stamp = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            stamp = None
        if stamp is None:
            self.problems.append("its time is not a date")
            return None
        return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)

    def seconds(self, value: Value) -> float:
        if isinstance(value, int | float) and 0 <= value <= _MAX_AUDIO_S:
            return float(value)
        self.problems.append("its duration is not a number of seconds")
        return 0.0


def entry_from_row(row: tuple[Value, ...]) -> Entry:
    """The entry a row of `COLUMNS` holds; `damage` names what needed a stand-in."""
    (entry_id, created_at, text, model, engine, provider, audio_s, timings) = row[:8]
    (delivered, error, delivered_text, target, rerun_of, recovered, verified) = row[8:15]
    (raw_text, cleaned_text, cleanup, mode) = row[15:]
    read = _Reader()
    return Entry(
        id=entry_id if isinstance(entry_id, int) else 0,
        created_at=read.time(created_at),
        text=read.text(text, "text") or "",
        model=read.text(model, "model name") or "",
        engine=read.text(engine, "engine") or "",
        provider=read.text(provider, "provider") or "",
        audio_s=read.seconds(audio_s),
        timings=parse_timings(timings),
        delivered=delivered == 1,
        delivery_error=read.text(error, "delivery error", required=False),
        delivered_text=read.text(delivered_text, "delivered text", required=False),
        delivery_target=read.text(target, "target window", required=False),
        rerun_of=rerun_of if isinstance(rerun_of, int) else None,
        recovered=recovered == 1,
        verified=read.text(verified, "check", required=False),
        raw_text=read.text(raw_text, "recognised text", required=False),
        cleaned_text=read.text(cleaned_text, "cleaned-up text", required=False),
        cleanup=read.text(cleanup, "clean-up outcome", required=False),
        mode=read.text(mode, "mode", required=False),
        damage="; ".join(read.problems) or None,
    )


def timings_json(timings: Mapping[str, float]) -> str:
    """Timings as stored: NaN and infinities are not JSON; null keeps the stage name
    without breaking readers."""
    clean = {str(k): (float(v) if math.isfinite(float(v)) else None) for k, v in timings.items()}
    return json.dumps(clean, allow_nan=False)


def parse_timings(stored: Value) -> dict[str, float]:
    """Stage timings from the stored JSON; what is not a finite number is left out."""
    if not isinstance(stored, str):
        return {}
    try:
        data = json.loads(stored)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    timings: dict[str, float] = {}
    for stage, value in data.items():
        if type(value) is float:  # what Voxtray writes: finite, or null
            timings[stage] = value
        elif type(value) is int:
            with contextlib.suppress(OverflowError):  # an integer past the float range
                timings[stage] = float(value)
    return {stage: seconds for stage, seconds in timings.items() if math.isfinite(seconds)}
