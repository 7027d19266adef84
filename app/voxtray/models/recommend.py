""" "Recommended here": the most accurate measured model whose release -> text latency fits
a budget, and the catalog models that could do better.

Accuracy is an ordering of tiers, least accurate first, from the published English word error
rates of each model (Open ASR Leaderboard and the model cards); a model missing from it
ranks by its download size below every listed one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from voxtray.errors import escaped
from voxtray.models.catalog import Catalog, ModelEntry
from voxtray.models.measurements import Measurement
from voxtray.settings_schema import Key

DEFAULT_BUDGET_MS = cast(int, Key.RECOMMEND_BUDGET_MS.spec.default)

ACCURACY_TIERS: tuple[tuple[str, ...], ...] = (
    ("whisper-tiny.en", "sherpa-whisper-tiny.en"),
    ("moonshine-tiny",),
    ("whisper-base", "sherpa-whisper-base"),
    ("moonshine-base",),
    ("parakeet-tdt-ctc-110m", "parakeet-tdt-ctc-110m-fp32"),
    ("sherpa-whisper-distil-small.en",),
    ("sherpa-whisper-small.en",),
    ("sherpa-whisper-turbo",),
    ("parakeet-tdt-0.6b-v3",),
    ("parakeet-tdt-0.6b-v2",),
)
"""Least accurate first; the models of one tier share weights (another conversion)."""


def accuracy_rank(name: str, catalog: Catalog | None = None) -> float:
    """Higher is more accurate."""
    for tier, names in enumerate(ACCURACY_TIERS, start=1):
        if name in names:
            return float(tier)
    entry = catalog.models.get(name) if catalog is not None else None
    size = entry.size_mb if entry is not None else 0.0
    return size / (size + 1.0)  # in [0, 1): below every listed model, bigger above smaller


@dataclass(frozen=True)
class Candidate:
    """A catalog model, not installed, expected to be more accurate than the pick."""

    name: str
    download_mb: float

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "download_mb": self.download_mb}


@dataclass(frozen=True)
class Recommendation:
    budget_ms: float
    pick: Measurement | None
    fits: bool  # False: nothing fits the budget and `pick` is the fastest
    measurements: list[Measurement]
    better: list[Candidate] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "budget_ms": self.budget_ms,
            "recommended": self.pick.model if self.pick is not None else None,
            "fits_budget": self.fits,
            "measurements": [m.to_json() for m in self.measurements],
            "could_do_better": [c.to_json() for c in self.better],
        }


def _download_mb(entry: ModelEntry) -> float:
    size = entry.download_bytes
    return round(size / 1e6, 1) if size else entry.size_mb


def recommend(
    measurements: list[Measurement],
    budget_ms: float,
    catalog: Catalog,
    installed: set[str] | None = None,
) -> Recommendation:
    """The most accurate of `measurements` whose latency fits `budget_ms`; if none fits,
    the fastest. `better` lists speech models of the catalog outside `installed` (default:
    the measured ones) that rank above the pick, with their download size."""
    sound = [m for m in measurements if not m.wrong_text]  # wrong words are no speed
    fitting = [m for m in sound if m.latency_ms <= budget_ms]
    pick: Measurement | None
    if fitting:
        pick = max(fitting, key=lambda m: (accuracy_rank(m.model, catalog), -m.latency_ms))
    else:
        pick = min(sound, key=lambda m: m.latency_ms, default=None)
    have = installed if installed is not None else {m.model for m in measurements}
    floor = accuracy_rank(pick.model, catalog) if pick is not None else -1.0
    have_ranks = {accuracy_rank(name, catalog) for name in have}  # another conversion of one
    better = [
        Candidate(entry.name, _download_mb(entry))
        for entry in catalog.models.values()
        if entry.family != "silero-vad"
        and entry.name not in have
        and accuracy_rank(entry.name, catalog) > floor
        and accuracy_rank(entry.name, catalog) not in have_ranks
    ]
    better.sort(key=lambda c: accuracy_rank(c.name, catalog), reverse=True)
    return Recommendation(budget_ms, pick, bool(fitting), measurements, better)


def format_table(result: Recommendation) -> str:
    lines = [
        f"{'model':<28} {'precision':<9} {'provider':<8} "
        f"{'5 s -> text':>11} {'RTF':>6} {'memory':>8} {'words right':>11}"
    ]
    for m in result.measurements:
        mark = " *" if result.pick is not None and m.model == result.pick.model else ""
        right = "wrong words" if m.wrong_text else f"{100 * max(0.0, 1 - m.wer):.0f} %"
        lines.append(
            f"{escaped(m.model):<28} {escaped(m.precision):<9} {escaped(m.provider):<8} "
            f"{m.latency_ms:>8.0f} ms {m.rtf:>6.3f} {m.memory_mb:>5.0f} MB {right:>11}{mark}"
        )
    budget = f"{result.budget_ms:.0f} ms for 5 s of speech"
    if result.pick is None:
        lines.append("no speech model is installed")
    elif result.fits:
        pick = escaped(result.pick.model)
        lines.append(f"recommended here: {pick} (fits the budget of {budget})")
    else:
        lines.append(
            f"nothing fits the budget of {budget}; the fastest is {escaped(result.pick.model)} "
            f"({result.pick.latency_ms:.0f} ms)"
        )
    if result.better:
        lines.append("catalog models that could be more accurate (download size):")
        lines += [f"  {escaped(c.name)} ({c.download_mb:.0f} MB)" for c in result.better]
    return "\n".join(lines)
