"""Soak run: many push-to-talk cycles through the real stack, headless and time-compressed.

Every cycle goes through the InferenceWorker on its QThread, as the tray drives it:
``worker.start()`` from the main thread, ``stop_requested`` queued to the worker, the
utterance signal queued back to the main thread. Underneath are the real Dictation,
Microphone (fed by ``FakeSoundDevice`` replaying real clips faster than real time),
Silero VAD, whisper-tiny.en int8 on the ort engine, a History in a temporary SQLite file
and an output that records what it was asked to type.

Speech cycles vary in length as dictation does: whole clips, two clips back to back and
random crops, so the recogniser sees hundreds of distinct input lengths (onnxruntime
grows its memory with each new one unless told not to).

Resources are sampled after every cycle; the run fails if RSS over the last cycles is more
than 5 % above RSS over the first dictations (window floors), if threads or file descriptors do
not come back to their warm-up counts, or if any utterance is missing from the history or
does not match its clip.

    python -m tests.support.soak --cycles 500
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import platform
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PySide6.QtCore import QCoreApplication, Qt

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.models import ensure_installed
from tests.support.outputs import RecordingOutput
from tests.support.sounddevice import FakeSoundDevice, FakeStream
from voxtray.bench.normalizer import normalize_english
from voxtray.bench.runner import rss_mb
from voxtray.bench.wer import word_errors
from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.dictation.session import Dictation
from voxtray.dictation.utterance import Utterance
from voxtray.history.store import History
from voxtray.memory import return_large_blocks
from voxtray.models.store import ModelStore

RATE = 16000
# Short clips that whisper-tiny.en gets right (WER <= 0.2); one of them (5.4 s) splits
# into two VAD segments, so recognition also runs while audio is still arriving.
CLIP_IDS = (
    "harvard_sb_example1",
    "ls_1089-134691-0000",
    "ljspeech_LJ002-0020",
    "ljspeech_LJ002-0035",
    "timit_ldc93s1",
    "ls_260_fw_right",
    "ls_1089-134691-0001",
)
SETTINGS = Settings(model="whisper-tiny.en", engine="ort", provider="cpu", precision="int8")
SPEED = 16.0  # audio plays this many times faster than real time
WARMUP = 20  # cycles before thread, descriptor and reference counts must hold still
MAX_RSS_GROWTH = 0.05
MAX_WER = 0.3
# A crop cuts words at both ends and tiny.en guesses at the pieces (one crop in ten or so
# comes out with no word of its clip), so crops are checked together: on average most of
# their words must be words their clip says, which text from another utterance is not.
MIN_CROP_PRECISION = 0.6
MIN_CROP_S = 0.6
RSS_WINDOW_START = 25
RSS_SETTLE_CYCLES = 100
"""RSS rises over the first ~75 cycles as the decoder's arena meets longer utterances, then
stays flat; the gate compares the settled window with the last one (both are printed)."""
RSS_WINDOW_END = 25
RSS_FLOOR_PERCENTILE = 20
"""RSS after a cycle jumps by up to ~10 % with heap the allocator has not yet returned;
the floor of a window (its 20th percentile) is what stays, and a leak lifts it too."""
SILENCE_SAMPLES = RATE  # a key held 1 s over silence
TAP_SAMPLES = RATE // 10  # a 0.1 s tap
CYCLE_TIMEOUT_S = 30.0
# Stop before a falling singleton refcount reaches 0 and aborts the interpreter.
REFS_FLOOR = 200
# Singleton references may come and go with the objects holding them, but not steadily.
MAX_REFS_FALL = 50


@dataclass(frozen=True)
class Clip:
    id: str
    audio: NDArray[np.float32]
    reference: str


@dataclass(frozen=True)
class Speech:
    """What one speech cycle says: a clip, two clips back to back, or a crop of a clip."""

    label: str  # a clip id, "pair" or "crop"
    audio: NDArray[np.float32]
    reference: str
    cropped: bool = False


def load_clips(ids: tuple[str, ...] = CLIP_IDS) -> list[Clip]:
    with (SPEECH_DIR / "manifest.tsv").open(encoding="utf-8", newline="") as stream:
        rows = {
            row["id"]: row for row in csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE)
        }
    return [Clip(i, read_wav(SPEECH_DIR / rows[i]["wav"]), rows[i]["reference"]) for i in ids]


# -- resources --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """This process's resources at one moment."""

    rss_mb: float
    threads: int  # Python threads (threading.active_count)
    native_threads: int  # kernel tasks: ORT pools, Qt, the fake PortAudio thread, ...
    fds: int
    # References to the singletons: a C extension that returns them without a new
    # reference makes these fall until the interpreter aborts ("deallocating None").
    # Python 3.12+ makes them immortal, with a huge constant count.
    none_refs: int
    true_refs: int
    false_refs: int

    @staticmethod
    def now() -> Sample:
        return Sample(
            rss_mb=rss_mb(),
            threads=threading.active_count(),
            native_threads=len(os.listdir("/proc/self/task")),
            fds=len(os.listdir("/proc/self/fd")),
            none_refs=sys.getrefcount(None),
            true_refs=sys.getrefcount(True),
            false_refs=sys.getrefcount(False),
        )

    @property
    def fewest_refs(self) -> int:
        return min(self.none_refs, self.true_refs, self.false_refs)


# -- the fake microphone's audio ---------------------------------------------------------


class ClipFeed:
    """Stands in for ``FakeSoundDevice.audio``: one clip at an absolute sample, silence
    everywhere else. The fake stream's position grows for ever; an array that kept all of
    it (as tests.dictation.test_dictation.speak does) would itself grow by ``SPEED`` x 64 kB/s."""

    def __init__(self) -> None:
        self.base = 0
        self.clip = np.zeros(0, dtype=np.float32)

    def place(self, base: int, clip: NDArray[np.float32]) -> int:
        self.base, self.clip = base, clip
        return base + clip.size

    def __getitem__(self, key: slice) -> NDArray[np.float32]:
        start, stop = int(key.start), int(key.stop)
        out = np.zeros(stop - start, dtype=np.float32)
        first, last = max(start, self.base), min(stop, self.base + self.clip.size)
        if first < last:
            out[first - start : last - start] = self.clip[first - self.base : last - self.base]
        return out


# -- the rig: worker thread, dictation, fake microphone ---------------------------------


class Collector:
    """What the worker reported, appended on the worker's thread (direct connections)."""

    def __init__(self) -> None:
        self.utterances: deque[Utterance] = deque()
        self.warnings: list[str] = []
        self.loaded = False


class WorkerRig:
    """An InferenceWorker on its QThread driving a real Dictation fed by a fake device."""

    def __init__(self, store: ModelStore, workdir: Path, speed: float = SPEED) -> None:
        from voxtray.ui.worker import InferenceWorker, start_worker

        self.app = QCoreApplication.instance() or QCoreApplication([])
        self.store = store
        self.feed = ClipFeed()
        self.fake = FakeSoundDevice(np.zeros(0, np.float32), speed=speed)
        self.fake.audio = self.feed  # type: ignore[assignment]  # sliced like an array
        self.output = RecordingOutput()
        self.history = History(workdir / "history.sqlite3")
        self.got = Collector()
        self.worker = InferenceWorker(self._make_dictation, SETTINGS)
        self._connect()
        self.thread = start_worker(self.worker)
        self.wait_until(lambda: self.got.loaded, 300.0, "the model to load")
        self._bound_fake_stream()

    def _make_dictation(self, callbacks: Any) -> Dictation:
        return Dictation(
            self.store,
            self.history,
            callbacks,
            sd_module=self.fake,
            output_factory=lambda name: self.output,
        )

    def _connect(self) -> None:
        # Direct: the worker thread appends to thread-safe containers, so the main thread
        # needs no event loop. (Pumping one with processEvents() would itself drop a
        # reference to None per call under PySide6 6.12 on CPython 3.11.)
        direct = Qt.ConnectionType.DirectConnection
        self.worker.utterance.connect(self.got.utterances.append, direct)
        self.worker.warning.connect(self.got.warnings.append, direct)
        self.worker.loaded.connect(lambda loaded: setattr(self.got, "loaded", True), direct)

    def _bound_fake_stream(self) -> None:
        # The fake records every callback's duration; keep only the last few.
        self.stream.callback_seconds = deque(maxlen=64)  # type: ignore[assignment]

    @property
    def stream(self) -> FakeStream:
        return self.fake.streams[-1]

    @property
    def dictation(self) -> Dictation:
        return self.worker.dictation

    @staticmethod
    def wait_until(done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout:g} s for {what}")
            time.sleep(0.001)

    def press(self) -> None:
        if not self.worker.start():
            raise RuntimeError(f"start() refused in state {self.dictation.state}")

    def speak(self, clip: NDArray[np.float32]) -> int:
        """The fake microphone hears ``clip`` from the next block on; returns its end."""
        end = self.feed.place(self.stream.hold(), clip)
        self.stream.resume()
        return end

    def hear_silence(self, samples: int) -> None:
        self.stream.wait_for(self.stream.position + samples)

    def release(self) -> Utterance:
        self.worker.stop_requested.emit()
        self.wait_until(self._settled, CYCLE_TIMEOUT_S, "the utterance")
        return self.got.utterances.popleft()

    def _settled(self) -> bool:
        return bool(self.got.utterances) and self.dictation.state is DictationState.READY

    def close(self) -> None:
        self.thread.quit()
        self.thread.wait(10_000)
        self.dictation.close()


def build_rig(store: ModelStore, workdir: Path, speed: float = SPEED) -> WorkerRig:
    for name in (SETTINGS.model, store.catalog.default_vad):
        ensure_installed(store, name)
    return WorkerRig(store, workdir, speed)


# -- one cycle --------------------------------------------------------------------------


@dataclass(frozen=True)
class Cycle:
    index: int
    kind: str  # "speech", "silence" or "tap"
    clip: str
    text: str
    history_id: int
    release_to_text_ms: float
    wall_s: float
    wer: float = 0.0
    precision: float = 1.0  # crops only: share of words the clip really says
    samples: int = 0  # speech fed to the microphone
    segments_ms: tuple[int, ...] = ()  # the VAD segments the recogniser got


def plan(index: int, clips: list[Clip]) -> tuple[str, Clip | None]:
    """Every 10th cycle is silence, every 10th + 5 a tap; the rest rotate the clips."""
    if index % 10 == 9:
        return "silence", None
    if index % 10 == 4:
        return "tap", None
    return "speech", clips[index % len(clips)]


def speech_for(index: int, clip: Clip, clips: list[Clip], rng: np.random.Generator) -> Speech:
    """Every other speech cycle a random crop of ``clip``; the others ``clip`` alone or,
    one time in three, followed by another clip after a short pause."""
    if index % 2:
        length = int(rng.integers(int(MIN_CROP_S * RATE), clip.audio.size + 1))
        start = int(rng.integers(0, clip.audio.size - length + 1))
        return Speech("crop", clip.audio[start : start + length], clip.reference, cropped=True)
    if index % 3 == 0:
        other = clips[int(rng.integers(0, len(clips)))]
        pause = np.zeros(int(rng.integers(RATE // 10, RATE // 2)), dtype=np.float32)
        audio = np.concatenate([clip.audio, pause, other.audio])
        return Speech("pair", audio, f"{clip.reference} {other.reference}")
    return Speech(clip.id, clip.audio, clip.reference)


def crop_precision(reference: str, text: str) -> float:
    """Share of the transcript's words that the clip says (1.0 for no words)."""
    said = set(normalize_english(reference).split())
    words = normalize_english(text).split()
    return sum(w in said for w in words) / len(words) if words else 1.0


def run_cycle(rig: WorkerRig, index: int, clips: list[Clip], rng: np.random.Generator) -> Cycle:
    kind, clip = plan(index, clips)
    speech = speech_for(index, clip, clips, rng) if clip is not None else None
    began = time.perf_counter()
    rig.press()
    if speech is not None:
        rig.stream.wait_for(rig.speak(speech.audio))
        rig.hear_silence(int(rng.integers(0, RATE * 3 // 10)))  # key up 0-300 ms later
    else:
        rig.hear_silence(TAP_SAMPLES if kind == "tap" else SILENCE_SAMPLES)
    utterance = rig.release()
    score = 0.0
    if speech is not None:
        score = (
            crop_precision(speech.reference, utterance.text)
            if speech.cropped
            else word_errors(speech.reference, utterance.text).rate
        )
    return Cycle(
        index=index,
        kind=kind,
        clip=speech.label if speech else "",
        text=utterance.text,
        history_id=utterance.history_id,
        release_to_text_ms=utterance.timings_ms["release_to_text"],
        wall_s=time.perf_counter() - began,
        wer=score if speech is None or not speech.cropped else 0.0,
        precision=score if speech is not None and speech.cropped else 1.0,
        samples=speech.audio.size if speech else 0,
        segments_ms=tuple(round(1000 * (s.end_s - s.start_s)) for s in utterance.record.segments),
    )


# -- the run ----------------------------------------------------------------------------


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


def check_history(rig: WorkerRig, report: SoakReport) -> None:
    report.history_count = rig.history.count()
    for c in report.cycles:
        entry = rig.history.get(c.history_id)
        if entry is None or entry.text != c.text:
            found = None if entry is None else entry.text
            report.history_mismatches.append(f"cycle {c.index}: history has {found!r}")
        elif bool(c.text) != entry.delivered:
            report.history_mismatches.append(f"cycle {c.index}: delivered={entry.delivered}")
    typed = [c.text + " " for c in report.cycles if c.text]
    report.typed_ok = rig.output.typed == typed


def run_soak(
    store: ModelStore,
    workdir: Path,
    cycles: int = 500,
    *,
    speed: float = SPEED,
    warmup: int = WARMUP,
    trace: bool = False,
    progress: Callable[[str], None] = lambda line: None,
) -> SoakReport:
    """Build the rig, run ``cycles`` push-to-talk cycles, check and close it."""
    clips = load_clips()
    report = SoakReport(warmup=min(warmup, cycles))
    report.before = Sample.now()
    began = time.perf_counter()
    rig = build_rig(store, workdir, speed)
    report.load_s = time.perf_counter() - began
    try:
        _run_cycles(rig, report, cycles, clips, trace, progress)
        report.duration_s = time.perf_counter() - began - report.load_s
        check_history(rig, report)
        report.warnings = list(rig.got.warnings)
        report.streams_opened = len(rig.fake.streams)
    finally:
        rig.close()
    report.leftover_threads = _voxtray_threads()
    report.after_close = Sample.now()
    return report


def _run_cycles(
    rig: WorkerRig,
    report: SoakReport,
    cycles: int,
    clips: list[Clip],
    trace: bool,
    progress: Callable[[str], None],
) -> None:
    rng = np.random.default_rng(0)
    for index in range(cycles):
        report.cycles.append(run_cycle(rig, index, clips, rng))
        report.samples.append(Sample.now())
        if index + 1 == report.warmup:
            report.py_objects = (_gc_objects(), 0)
            if trace:
                tracemalloc.start(25)
        if (index + 1) % 50 == 0:
            progress(f"{index + 1} cycles, {report.samples[-1]}")
        if report.samples[-1].fewest_refs < REFS_FLOOR:
            report.stopped_early = _refs_message(report, index + 1)
            break
    report.py_objects = (report.py_objects[0], _gc_objects())
    if trace:
        report.tracemalloc_top = _trace_top()


def _refs_message(report: SoakReport, done: int) -> str:
    first, last = report.samples[0], report.samples[-1]
    falls = {
        name: (getattr(first, name) - getattr(last, name)) / max(1, done - 1)
        for name in ("none_refs", "true_refs", "false_refs")
    }
    rates = ", ".join(f"{name} {rate:+.1f}" for name, rate in falls.items())
    return (
        f"stopped after {done} cycles: {last} is close to 0 references, when the"
        f" interpreter aborts (deallocating None/True/False); fall per cycle: {rates}"
    )


def _gc_objects() -> int:
    gc.collect()
    return len(gc.get_objects())


def _trace_top(limit: int = 15) -> list[str]:
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = snapshot.statistics("traceback")[:limit]
    return ["tracemalloc, allocations alive at the end that were made after warm-up:"] + [
        f"  {stat.size / 1024:.1f} KiB in {stat.count} blocks at {stat.traceback.format()[-1]}"
        for stat in stats
    ]


def give_back_lost_references(report: SoakReport) -> int:
    """Add back references to None/True/False that a C extension dropped during the run.

    Once lost, those references make the interpreter abort while it shuts down
    ("deallocating True or False"), which would kill a whole pytest session instead of
    failing one test. The run has already reported the fall; extra references to these
    singletons are harmless (Python 3.12+ makes them immortal anyway).

    Returns:
        How many references were added, in all.
    """
    if sys.version_info >= (3, 12) or report.before is None or report.after_close is None:
        return 0
    import ctypes

    added = 0
    for singleton, name in ((None, "none_refs"), (True, "true_refs"), (False, "false_refs")):
        fell = getattr(report.before, name) - getattr(report.after_close, name)
        steady = getattr(report.warm, name) - getattr(report.end, name)
        if steady > MAX_REFS_FALL or report.stopped_early:
            extra = max(fell, steady) + 1000
            for _ in range(extra):
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(singleton))
            added += extra
    return added


def _voxtray_threads() -> list[str]:
    ours = ("voxtray-", "fake-portaudio")
    return [t.name for t in threading.enumerate() if t.name.startswith(ours)]


# -- command line -----------------------------------------------------------------------


def machine() -> str:
    import onnxruntime

    cpu = "unknown CPU"
    with open("/proc/cpuinfo", encoding="utf-8") as stream:
        for line in stream:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()},"
        f" onnxruntime {onnxruntime.__version__}, {platform.platform()}"
    )


@contextmanager
def _workdir(path: str | None) -> Iterator[Path]:
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="voxtray-soak-") as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.soak", description=__doc__)
    parser.add_argument("--cycles", type=int, default=500)
    parser.add_argument("--speed", type=float, default=SPEED, help="audio time compression")
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--workdir", help="keep the history database here")
    parser.add_argument("--trace", action="store_true", help="tracemalloc after warm-up")
    args = parser.parse_args(argv)
    if args.cycles < 1 or not 1 <= args.warmup <= args.cycles:
        parser.error("need --cycles >= 1 and 1 <= --warmup <= --cycles")
    from tests.support.models import suite_home
    from voxtray.models.catalog import load_catalog

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return_large_blocks()  # as the tray app does at start
    store = ModelStore(suite_home() / "models", load_catalog())
    print(machine(), flush=True)
    with _workdir(args.workdir) as workdir:
        report = run_soak(
            store,
            workdir,
            args.cycles,
            speed=args.speed,
            warmup=args.warmup,
            trace=args.trace,
            progress=lambda line: print(line, flush=True),
        )
    print(report.details())
    print(report.summary())
    for problem in report.problems():
        print("PROBLEM:", problem)
    if added := give_back_lost_references(report):
        print(f"(gave back {added} lost references to None/True/False so that Python exits)")
    return 1 if report.problems() else 0


if __name__ == "__main__":
    sys.exit(main())
