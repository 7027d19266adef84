"""Measure installed models on this machine: release -> text latency for a 5 s dictation,
real-time factor, memory and the provider that really ran.

The clip is the self-test's recording (`resources/selftest.wav`), tiled to exactly
`DICTATION_S` seconds of speech, so the latency timed is that of a real 5 s segment, not a
shorter one scaled. Results are kept in `measurements.json` in the data folder
(`voxtray.models.measurements`), keyed by model, precision and requested provider, and each
carries the machine's fingerprint and the model's install stamp: a result whose fingerprint
or stamp differs is measured again. One measurement runs at a time on the machine.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from voxtray.choices import Precision
from voxtray.errors import escaped
from voxtray.gpu.providers import resolve_request
from voxtray.inference.accuracy import check_clip
from voxtray.inference.engines import EngineChoice, pick_precision
from voxtray.inference.measured_here import (
    is_current,
    machine_fingerprint,
    model_stamp,
    wrong_here,
)
from voxtray.memory import release_free_memory
from voxtray.models.measurements import (
    Fingerprint,
    Measured,
    Measurement,
    MeasurementCache,
    cache_key,
    default_cache,
)
from voxtray.models.store import InstalledModel

DICTATION_S = 5.0
SAMPLE_RATE = 16000
TIMED_RUNS = 3


def dictation_audio() -> NDArray[np.float32]:
    """`DICTATION_S` seconds of real speech: the self-test clip repeated and cut."""
    from voxtray.audio.decode import load_audio
    from voxtray.resources import resource_path

    clip = load_audio(resource_path("selftest.wav"))
    wanted = int(DICTATION_S * SAMPLE_RATE)
    repeats = -(-wanted // len(clip))
    return np.tile(clip, repeats)[:wanted].astype(np.float32)


def resident_mb() -> float:
    """This process's resident memory (Linux; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure_model(
    model: InstalledModel,
    choice: EngineChoice,
    *,
    runs: int = TIMED_RUNS,
    precision: str | None = None,
) -> Measurement:
    """Load `model` as dictation would (`choice`, or `precision` where given), check the
    words it hears in the accuracy clip, then time `runs` warm transcriptions of a 5 s
    segment; the latency is their median."""
    from voxtray.inference.assembly import load_recognizer

    requested = resolve_request(choice.provider)
    precision = precision or pick_precision(model, choice.precision, requested)
    audio = dictation_audio()
    release_free_memory()  # the previous model's freed pages must not hide this one's
    before = resident_mb()
    started = time.perf_counter()
    recognizer = load_recognizer(model, choice, precision=precision)
    load_ms = 1000 * (time.perf_counter() - started)
    heard = check_clip(recognizer)
    timings = []
    for _ in range(max(1, runs)):
        began = time.perf_counter()
        recognizer.transcribe(audio)
        timings.append(1000 * (time.perf_counter() - began))
    memory = max(0.0, resident_mb() - before)
    latency = statistics.median(timings)
    return Measurement(
        model=model.name,
        precision=precision,
        requested=str(requested),
        provider=recognizer.provider,
        latency_ms=round(latency, 1),
        rtf=round(latency / (1000 * DICTATION_S), 4),
        load_ms=round(load_ms, 1),
        memory_mb=round(memory, 1),
        text=escaped(heard.text),
        model_stamp=model_stamp(model),
        fingerprint=machine_fingerprint(),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        wer=heard.wer,
        wrong_text=heard.wrong,
    )


def kept_results(
    models: Iterable[InstalledModel], choice: EngineChoice, cache: MeasurementCache | None = None
) -> Measured:
    """The kept measurements still current for `models` and `choice`; measures nothing."""
    kept, notes = (cache or default_cache()).read()
    fingerprint = machine_fingerprint()
    requested = str(resolve_request(choice.provider))
    found = []
    for model in models:
        avoid = wrong_here(model, requested, kept, fingerprint)
        precision = pick_precision(model, choice.precision, requested, avoid=avoid)
        old = kept.get(cache_key(model.name, precision, requested))
        if old is not None and is_current(old, model, fingerprint):
            found.append(old)
    return Measured(found, notes)


def _current(
    model: InstalledModel,
    choice: EngineChoice,
    kept: dict[str, Measurement],
    fingerprint: Fingerprint,
    force: bool,
    say: Callable[[str], None],
    runs: int,
) -> tuple[Measurement, bool]:
    """The current measurement of `model` (kept, or made and added to `kept`) and whether
    one was made. A precision auto chose that gives wrong words here is kept as such,
    and the next one auto would choose is measured in its place."""
    requested = str(resolve_request(choice.provider))
    measured: set[str] = set()
    while True:
        avoid = wrong_here(model, requested, kept, fingerprint)
        precision = pick_precision(model, choice.precision, requested, avoid=avoid)
        key = cache_key(model.name, precision, requested)
        old = kept.get(key)
        again = force and precision not in measured
        if old is None or not is_current(old, model, fingerprint) or again:
            why = f" in {precision}: {', '.join(sorted(avoid))} gives wrong words here"
            say(f"measuring {model.name}{why if avoid else ''}")
            kept[key] = measure_model(model, choice, runs=runs, precision=precision)
            measured.add(precision)
        result = kept[key]
        others = set(model.manifest["variants"]) - avoid - {precision}
        if not (result.wrong_text and choice.precision == Precision.AUTO and others):
            return result, bool(measured)


def measure_all(
    models: Iterable[InstalledModel],
    choice: EngineChoice,
    *,
    cache: MeasurementCache | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    runs: int = TIMED_RUNS,
) -> Measured:
    """A current measurement of each model: the kept one when its model, precision,
    provider, install stamp and machine fingerprint all match, otherwise a new one (saved).

    Waits for a measurement already running on this machine (another window, another
    process) to finish first: two at once would each keep the other's load as the speed.
    Results that cannot be saved are still returned, with a note saying so.
    """
    say = progress or (lambda _message: None)
    cache = cache or default_cache()
    with cache.turn(lambda: say("waiting for another measurement on this machine to finish")):
        kept, notes = cache.read()
        fingerprint = machine_fingerprint()
        results: list[Measurement] = []
        changed = False
        for model in models:
            result, measured = _current(model, choice, kept, fingerprint, force, say, runs)
            results.append(result)
            changed = changed or measured
        if changed:
            notes += cache.save_or_say(kept)
    return Measured(results, notes)
