"""The soak run: build the rig, run the cycles, check the history, close the rig."""

from __future__ import annotations

import gc
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tools.soak.cycle import run_cycle
from tools.soak.report import MAX_REFS_FALL, SoakReport
from tools.soak.rig import SPEED, WARMUP, Clip, Sample, WorkerRig, build_rig, load_clips
from voxtray.models.store import ModelStore

# Stop before a falling singleton refcount reaches 0 and aborts the interpreter.
REFS_FLOOR = 200


def check_history(rig: WorkerRig, report: SoakReport) -> None:
    report.history_count = rig.history.count()
    for c in report.cycles:
        entry = None if c.history_id is None else rig.history.get(c.history_id)
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
