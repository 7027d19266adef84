"""What a soak run measured and the problems it found: RSS windows, threads, descriptors,
singleton references, the cycles' texts against their clips."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tools.soak.cycle import Cycle
from tools.soak.rig import WARMUP, Sample

MAX_RSS_GROWTH = 0.05
MAX_WER = 0.3
# A crop cuts words at both ends and tiny.en guesses at the pieces (one crop in ten or so
# comes out with no word of its clip), so crops are checked together: on average most of
# their words must be words their clip says, which text from another utterance is not.
MIN_CROP_PRECISION = 0.6
RSS_WINDOW_START = 25
RSS_SETTLE_CYCLES = 100
"""RSS rises over the first ~75 cycles as the decoder's arena meets longer utterances, then
stays flat; the gate compares the settled window with the last one (both are printed)."""
RSS_WINDOW_END = 25
RSS_FLOOR_PERCENTILE = 20
"""RSS after a cycle jumps by up to ~10 % with heap the allocator has not yet returned;
the floor of a window (its 20th percentile) is what stays, and a leak lifts it too."""
# Singleton references may come and go with the objects holding them, but not steadily.
MAX_REFS_FALL = 50


@dataclass
class SoakReport:
    cycles: list[Cycle] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)  # one after each cycle
    before: Sample | None = None  # before the rig was built
    after_close: Sample | None = None
    py_objects: tuple[int, int] = (0, 0)  # gc-tracked objects at warm-up and at the end
    history_count: int = 0
    history_mismatches: list[str] = field(default_factory=list)
    leftover_threads: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    streams_opened: int = 0
    typed_ok: bool = True
    load_s: float = 0.0  # building the rig: model load, warm-up inference, microphone
    duration_s: float = 0.0  # the cycles
    warmup: int = WARMUP
    tracemalloc_top: list[str] = field(default_factory=list)
    stopped_early: str = ""

    @property
    def warm(self) -> Sample:
        return self.samples[min(self.warmup, len(self.samples)) - 1]

    @property
    def end(self) -> Sample:
        return self.samples[-1]

    @property
    def first(self) -> Sample:
        """After the first dictation: the model loaded and warmed up, one utterance done."""
        return self.samples[0]

    @property
    def rss_start_mb(self) -> float:
        """RSS floor over the first dictations (RSS_WINDOW_START samples)."""
        window = [s.rss_mb for s in self.samples[:RSS_WINDOW_START]]
        return float(np.percentile(window, RSS_FLOOR_PERCENTILE))

    @property
    def rss_settled_mb(self) -> float:
        """RSS floor over the window after the first RSS_SETTLE_CYCLES (the first window when
        the run is too short to have one)."""
        start = (
            RSS_SETTLE_CYCLES if len(self.samples) >= RSS_SETTLE_CYCLES + 2 * RSS_WINDOW_END else 0
        )
        window = [s.rss_mb for s in self.samples[start : start + RSS_WINDOW_START]]
        return float(np.percentile(window, RSS_FLOOR_PERCENTILE))

    @property
    def rss_settled_growth(self) -> float:
        """From the settled window to the last, floor to floor: what a leak would show."""
        return (self.rss_end_mb - self.rss_settled_mb) / self.rss_settled_mb

    @property
    def rss_end_mb(self) -> float:
        """RSS floor over the last dictations (RSS_WINDOW_END samples)."""
        window = [s.rss_mb for s in self.samples[-RSS_WINDOW_END:]]
        return float(np.percentile(window, RSS_FLOOR_PERCENTILE))

    @property
    def rss_growth(self) -> float:
        """From the first dictations to the last, floor to floor (see RSS_FLOOR_PERCENTILE)."""
        return (self.rss_end_mb - self.rss_start_mb) / self.rss_start_mb

    def distinct_lengths(self) -> int:
        """Distinct recogniser input lengths, to the 20 ms the encoder resolves."""
        return len({ms // 20 for c in self.cycles for ms in c.segments_ms})

    def crop_precision(self) -> float:
        """Mean share of a crop's words that its clip says, over crops with words."""
        scores = [c.precision for c in self.cycles if c.clip == "crop" and c.text]
        return float(np.mean(scores)) if scores else 1.0

    def distinct_speech(self) -> int:
        """Distinct lengths of the speech the microphone was fed."""
        return len({c.samples for c in self.cycles if c.samples})

    def latencies(self) -> list[float]:
        return [c.release_to_text_ms for c in self.cycles if c.kind == "speech"]

    def problems(self) -> list[str]:
        return [
            *self._resource_problems(),
            *self._cycle_problems(),
            *self.history_mismatches,
            *(f"warning from the worker: {w}" for w in self.warnings),
            *(f"thread left after close: {name}" for name in self.leftover_threads),
            *([self.stopped_early] if self.stopped_early else []),
        ]

    def _refs_fall(self, name: str) -> float:
        """How far a reference count fell over the second half of the run, median of a
        window to median of a window: first-use caches settle once after warm-up, while
        a C extension that drops references (PySide6 6.12.0: one per emit) keeps falling."""
        middle = len(self.samples) // 2
        mid = self.samples[middle : middle + RSS_WINDOW_END]
        last = self.samples[-RSS_WINDOW_END:]
        return float(
            np.median([getattr(s, name) for s in mid]) - np.median([getattr(s, name) for s in last])
        )

    def _resource_problems(self) -> list[str]:
        warm, end = self.warm, self.end
        found = []
        if self.rss_settled_growth > MAX_RSS_GROWTH:
            found.append(
                f"RSS grew {100 * self.rss_settled_growth:.1f} % after cycle {RSS_SETTLE_CYCLES}"
            )
        for name in ("threads", "native_threads", "fds"):
            if getattr(end, name) != getattr(warm, name):
                found.append(f"{name}: {getattr(warm, name)} at warm-up, {getattr(end, name)}")
        for name in ("none_refs", "true_refs", "false_refs"):
            fell = self._refs_fall(name)
            if fell > MAX_REFS_FALL:
                found.append(
                    f"{name} fell by {fell:.0f} over the second half: a C extension drops"
                    " references"
                    " (PySide6 6.12.0 on CPython 3.11 does: each emit() drops a True, each"
                    " call of a void Qt method a None)"
                )
        if self.streams_opened != 1:
            found.append(f"the microphone opened {self.streams_opened} streams (reopened)")
        if not self.typed_ok:
            found.append("the output was not asked to type exactly the non-empty texts")
        return found

    def _cycle_problems(self) -> list[str]:
        found = []
        if self.history_count != len(self.cycles):
            found.append(f"history holds {self.history_count} of {len(self.cycles)} utterances")
        for c in self.cycles:
            if c.kind != "speech" and c.text:
                found.append(f"cycle {c.index} ({c.kind}) typed {c.text!r}")
            if c.kind == "speech" and c.clip != "crop" and (not c.text or c.wer > MAX_WER):
                found.append(f"cycle {c.index} ({c.clip}) WER {c.wer:.2f}: {c.text!r}")
        if self.crop_precision() < MIN_CROP_PRECISION:
            share = 100 * self.crop_precision()
            found.append(f"crops: only {share:.0f} % of their words from their clip")
        return found

    def summary(self) -> str:
        warm, end = self.warm, self.end
        lat = self.latencies()
        return (
            f"soak: {len(self.cycles)} cycles in {self.duration_s:.0f} s"
            f" (load {self.load_s:.1f} s)"
            f" ({1000 * self.duration_s / max(1, len(self.cycles)):.0f} ms/cycle),"
            f" {self.distinct_speech()} distinct speech lengths,"
            f" {self.distinct_lengths()} distinct recogniser input lengths,"
            f" crops {100 * self.crop_precision():.0f} % words of their clip;"
            f" RSS {self.first.rss_mb:.1f} after the first dictation, floor"
            f" {self.rss_start_mb:.1f} over the first {RSS_WINDOW_START} ->"
            f" {self.rss_end_mb:.1f} MB over the last {RSS_WINDOW_END}"
            f" ({100 * self.rss_growth:+.2f} %; {100 * self.rss_settled_growth:+.2f} % from"
            f" cycle {RSS_SETTLE_CYCLES}); last {end.rss_mb:.1f},"
            f" peak {max(s.rss_mb for s in self.samples):.1f};"
            f" threads {warm.threads} -> {end.threads},"
            f" native {warm.native_threads} -> {end.native_threads};"
            f" fds {warm.fds} -> {end.fds};"
            f" history {self.history_count}/{len(self.cycles)};"
            f" release-to-text median {percentile(lat, 50):.0f} ms,"
            f" p90 {percentile(lat, 90):.0f} ms, max {max(lat, default=0):.0f} ms"
        )

    def details(self) -> str:
        rss = [s.rss_mb for s in self.samples]
        lines = [
            f"before the rig: {self.before}",
            f"after close:    {self.after_close}",
            f"RSS slope from the first dictation: {rss_slope(rss, 1):+.3f} MB per 100 cycles",
            "RSS every 25 cycles: "
            + ", ".join(f"{i}:{rss[i - 1]:.1f}" for i in [1, *range(25, len(rss) + 1, 25)]),
            f"gc-tracked objects: {self.py_objects[0]} at warm-up, {self.py_objects[1]} at end",
            *self._extremes(),
            f"cycle wall time median {percentile([c.wall_s for c in self.cycles], 50):.2f} s",
            *self._per_clip(),
            *self.tracemalloc_top,
        ]
        return "\n".join(lines)

    def _extremes(self) -> list[str]:
        lines = []
        for name in ("threads", "native_threads", "fds"):
            values = [getattr(s, name) for s in self.samples]
            for label, first in (("before warm-up", 0), ("after warm-up", self.warmup)):
                part = values[first:]
                if part:
                    at = first + int(np.argmax(part)) + 1
                    lines.append(
                        f"{name} {label}: min {min(part)}, max {max(part)} (after cycle {at})"
                    )
        return lines

    def _per_clip(self) -> list[str]:
        lines = []
        for name in sorted({c.clip or c.kind for c in self.cycles}):
            done = [c for c in self.cycles if (c.clip or c.kind) == name]
            lat = [c.release_to_text_ms for c in done]
            lines.append(
                f"  {name:24s} n={len(done):3d} release-to-text median"
                f" {percentile(lat, 50):4.0f} ms p90 {percentile(lat, 90):4.0f} ms"
                f" max WER {max(c.wer for c in done):.2f}"
                f" min precision {min(c.precision for c in done):.2f} text {done[-1].text!r}"
            )
        return lines


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def rss_slope(rss: list[float], warmup: int) -> float:
    tail = rss[warmup - 1 :]
    if len(tail) < 2:
        return 0.0
    return 100 * float(np.polyfit(np.arange(len(tail)), tail, 1)[0])
