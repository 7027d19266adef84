"""`measurements.json`: the kept results of "Measure on this machine", and the turn taken
to measure.

The file is read only when it is a regular file of bounded size, and each entry is checked
on its own: one that is not what Voxtray writes (a latency that is text, null, NaN or
negative, a name with terminal escapes, an entry filed under another model) is dropped,
so its model is measured again, and the others are kept. Measuring takes a lock beside the
file, so two measurements (two windows, the window and `voxtray models recommend`) never
run at once and time each other's load as this machine's speed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from voxtray.errors import disk_error
from voxtray.fileio import atomic_write, read_regular

MEASUREMENTS_FILE = "measurements.json"
MAX_FILE_BYTES = 4 * 2**20
"""Far above what the catalog's models, precisions and providers can fill."""
_FORMAT = 2
_OLDER_FORMATS = (1,)
"""Files an earlier Voxtray wrote: measured again, without a word (1 had no accuracy)."""


@dataclass(frozen=True)
class Fingerprint:
    """What makes a measurement stale when it changes."""

    cpu: str
    cores: int
    onnxruntime: str
    gpu: str


@dataclass(frozen=True)
class Measurement:
    model: str
    precision: str
    requested: str  # the provider asked for (auto resolved)
    provider: str  # the provider that ran
    latency_ms: float  # release -> text for 5 s of speech (warm median)
    rtf: float  # latency / speech duration
    load_ms: float
    memory_mb: float  # resident memory the loaded model and a transcription added
    text: str
    model_stamp: str
    fingerprint: Fingerprint
    measured_at: str
    wer: float  # word error rate on the accuracy clip (`voxtray.inference.accuracy`)
    wrong_text: bool  # too many of its words wrong: a precision to avoid on this machine

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Measurement:
        """A measurement as `to_json` wrote it.

        Raises:
            ValueError: naming the first member that is missing, extra or not what
                `to_json` writes (text with control characters, a latency that is not a
                number above 0, a negative or non-finite figure).
        """
        members = _members(data, Measurement)
        fingerprint = _members(members.pop("fingerprint"), Fingerprint)
        for name in _TEXT:
            _text(members, name)
        for name in ("cpu", "onnxruntime", "gpu"):
            _text(fingerprint, name)
        for name in _FIGURES:
            _figure(members, name, above_zero=name == "latency_ms")
        if not isinstance(members["wrong_text"], bool):
            raise ValueError("wrong_text is not true or false")
        cores = fingerprint["cores"]
        if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
            raise ValueError("fingerprint.cores is not a count of cores")
        return cls(fingerprint=Fingerprint(**fingerprint), **members)  # type: ignore[arg-type]


_TEXT = ("model", "precision", "requested", "provider", "text", "model_stamp", "measured_at")
_FIGURES = ("latency_ms", "rtf", "load_ms", "memory_mb", "wer")


def _members(data: object, kind: type) -> dict[str, object]:
    if not isinstance(data, dict):
        raise ValueError(f"{kind.__name__.lower()} is not an object")
    wanted = {f.name for f in dataclasses.fields(kind)}
    if set(data) != wanted:
        raise ValueError(f"{kind.__name__.lower()} has other members than {sorted(wanted)}")
    return dict(data)


def _text(members: dict[str, object], name: str) -> None:
    value = members[name]
    # Names are printed on terminals: an escape sequence in one would be obeyed there.
    if not isinstance(value, str) or not value.isprintable():
        raise ValueError(f"{name} is not printable text")


def _figure(members: dict[str, object], name: str, *, above_zero: bool) -> None:
    value = members[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number")
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float is no figure either
        raise ValueError(f"{name} is out of range") from None
    if not math.isfinite(number) or number < 0 or (above_zero and number == 0):
        raise ValueError(f"{name} is {number!r}, not a measured figure")
    members[name] = number


def cache_key(model: str, precision: str, requested: str) -> str:
    return f"{model}|{precision}|{requested}"


@dataclass(frozen=True)
class Measured:
    """Current measurements, and one line for each thing that went wrong with the kept
    ones (entries dropped, results that could not be saved)."""

    results: list[Measurement]
    notes: list[str] = field(default_factory=list)


class MeasurementCache:
    """`measurements.json`: one result per model, precision and requested provider."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Measurement]:
        return self.read()[0]

    def read(self) -> tuple[dict[str, Measurement], list[str]]:
        """The usable kept results, and a line about what could not be used. Anything
        missing is measured again, so a file that cannot be used loses only time."""
        shown = str(self.path)
        try:
            raw = json.loads(read_regular(self.path, MAX_FILE_BYTES))
        except FileNotFoundError:
            return {}, []
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return {}, [f"cannot read {shown} ({reason}); measuring again"]
        except (ValueError, RecursionError):
            return {}, [f"{shown} is not valid JSON; measuring again"]
        entries = raw.get("results") if isinstance(raw, dict) else None
        if isinstance(entries, dict) and raw.get("format") in _OLDER_FORMATS:
            return {}, []
        if not isinstance(entries, dict) or raw.get("format") != _FORMAT:
            return {}, [f"{shown} is not a measurements file Voxtray wrote; measuring again"]
        kept: dict[str, Measurement] = {}
        for key, value in entries.items():
            with contextlib.suppress(ValueError):
                measurement = Measurement.from_json(value)
                if key == cache_key(
                    measurement.model, measurement.precision, measurement.requested
                ):
                    kept[key] = measurement
        dropped = len(entries) - len(kept)
        if not dropped:
            return kept, []
        entries_word = "entry" if dropped == 1 else "entries"
        return kept, [f"ignored {dropped} damaged {entries_word} of {shown}; measuring again"]

    def save(self, results: dict[str, Measurement]) -> None:
        """Raises OSError when the file cannot be written; the old one is then intact."""
        data = {"format": _FORMAT, "results": {k: m.to_json() for k, m in results.items()}}
        text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
        atomic_write(self.path, text.encode("utf-8"), 0o644)

    def save_or_say(self, results: dict[str, Measurement]) -> list[str]:
        """Save, or one line saying why the results are kept only until the window or
        the command ends."""
        try:
            self.save(results)
        except OSError as exc:
            problem = disk_error(exc, str(self.path))
            return [f"{problem}; the results are not kept for next time"]
        return []

    @contextlib.contextmanager
    def turn(self, waiting: Callable[[], None]) -> Iterator[None]:
        """Hold the machine's one measuring turn (`waiting` is called before waiting for
        another holder). The lock is on a file beside the cache, released by the kernel
        when its holder dies; where no lock file can be made, nothing could be kept
        either, and measuring goes ahead."""
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks
            yield
            return
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self.path.with_name(self.path.name + ".lock"), flags, 0o600)
        except OSError:
            yield
            return
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                waiting()
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)


def default_cache() -> MeasurementCache:
    from voxtray.paths import data_home

    return MeasurementCache(data_home() / MEASUREMENTS_FILE)
