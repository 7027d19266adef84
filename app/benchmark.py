"""`voxtray bench`: accuracy, latency and memory of each engine against a peer (faster-whisper
on the same CTranslate2 weights), measured in one process so that ratios are fair.

WER is over every clip of at most `max_clip_s`; latency statistics over clips of at most
10 s, each clip's latency being the median of `repeats` runs after a warm-up.
"""

from __future__ import annotations

import csv
import gc
import os
import platform
import resource
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.audio.decode import load_audio
from app.errors import NotFoundError
from app.evaluation.wer import corpus_wer

LATENCY_CLIP_S = 10.0
TranscribeFn = Callable[[NDArray[np.float32]], str]


@dataclass(frozen=True)
class BenchClip:
    id: str
    audio: NDArray[np.float32]
    duration_s: float
    reference: str


@dataclass
class EngineResult:
    name: str
    provider: str
    wer: float
    errors: int
    words: int
    median_ms: float
    p90_ms: float
    rtf: float
    peak_rss_mb: float
    load_s: float
    ratio_to_peer: float | None = None
    texts: dict[str, str] = field(default_factory=dict)
    latencies_ms: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("texts")
        data.pop("latencies_ms")
        return data


def load_manifest(path: Path, max_clip_s: float) -> list[BenchClip]:
    """The manifest's clips of at most `max_clip_s`, decoded to 16 kHz mono."""
    if not path.is_file():
        raise NotFoundError(f"{path}: no such manifest")
    with path.open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    clips = []
    for row in rows:
        audio = load_audio(path.parent / row["wav"])
        duration = audio.size / 16000
        if duration <= max_clip_s:
            clips.append(BenchClip(row["id"], audio, duration, row["reference"]))
    return clips


def rss_mb() -> float:
    """This process's resident memory now (Linux), else its peak so far."""
    try:
        with open("/proc/self/statm", encoding="ascii") as stream:
            return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def peak_rss() -> Iterator[list[float]]:
    """Samples RSS every 10 ms while the block runs; yields a one-item list with the peak."""
    peak = [rss_mb()]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.01):
            peak[0] = max(peak[0], rss_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()
        peak[0] = max(peak[0], rss_mb())


def measure(
    name: str,
    load: Callable[[], tuple[TranscribeFn, str]],
    clips: list[BenchClip],
    repeats: int,
) -> EngineResult:
    """Load an engine, warm it up, run every clip `repeats` times."""
    gc.collect()
    with peak_rss() as peak:
        started = time.perf_counter()
        transcribe, provider = load()
        transcribe(clips[0].audio)
        load_s = time.perf_counter() - started
        texts: dict[str, str] = {}
        latencies: dict[str, float] = {}
        busy = 0.0
        for clip in clips:
            runs = []
            for _ in range(repeats):
                began = time.perf_counter()
                texts[clip.id] = transcribe(clip.audio)
                runs.append(time.perf_counter() - began)
            latencies[clip.id] = 1000 * statistics.median(runs)
            busy += sum(runs) / len(runs)
    short = sorted(latencies[c.id] for c in clips if c.duration_s <= LATENCY_CLIP_S)
    score = corpus_wer((c.reference, texts[c.id]) for c in clips)
    return EngineResult(
        name=name,
        provider=provider,
        wer=score.rate,
        errors=score.errors,
        words=score.words,
        median_ms=statistics.median(short),
        p90_ms=_percentile(short, 0.9),
        rtf=busy / sum(c.duration_s for c in clips),
        peak_rss_mb=round(peak[0], 1),
        load_s=load_s,
        texts=texts,
        latencies_ms=latencies,
    )


def _percentile(sorted_values: list[float], q: float) -> float:
    index = q * (len(sorted_values) - 1)
    low = int(index)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (index - low)


def faster_whisper_loader(ct2_dir: Path, threads: int) -> Callable[[], tuple[TranscribeFn, str]]:
    """The peer as BRIEF section 7 sets it: int8, beam 1, English, no VAD."""

    def load() -> tuple[TranscribeFn, str]:
        try:
            from faster_whisper import WhisperModel
        except ImportError:
            raise NotFoundError(
                "the faster-whisper peer is not installed (packaging/dev.sh test installs it)"
            ) from None
        model = WhisperModel(str(ct2_dir), device="cpu", compute_type="int8", cpu_threads=threads)

        def transcribe(audio: NDArray[np.float32]) -> str:
            segments, _ = model.transcribe(audio, beam_size=1, language="en", vad_filter=False)
            return " ".join(segment.text.strip() for segment in segments)

        return transcribe, "cpu"

    return load


def add_ratios(results: list[EngineResult], peer: EngineResult | None) -> None:
    if peer is None:
        return
    for result in results:
        result.ratio_to_peer = round(result.median_ms / peer.median_ms, 3)


def machine_info() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }


# --- the CPU-vs-GPU matrix ---------------------------------------------------------------


@dataclass
class MatrixCell:
    """One model x precision x provider combination."""

    model: str
    precision: str
    requested: str
    provider: str
    cold_ms: float
    warm_ms: float
    rtf: float
    wer: float
    broken: str | None


def broken_output(texts: list[str], clips: list[BenchClip]) -> str | None:
    """Why the output cannot be trusted, or None: empty text on speech, or `<unk>` soup."""
    if any("<unk>" in text.lower() for text in texts):
        return "emits <unk> tokens"
    empty = sum(
        1 for text, clip in zip(texts, clips, strict=True) if not text.strip() and clip.reference
    )
    if empty > len(clips) // 2:
        return f"empty text on {empty} of {len(clips)} speech clips"
    return None


def matrix_cell(
    model: str,
    precision: str,
    requested: str,
    load: Callable[[], tuple[TranscribeFn, str]],
    clips: list[BenchClip],
) -> MatrixCell:
    """Cold (first call after loading) and warm (median of the rest) latency on short clips."""
    started = time.perf_counter()
    transcribe, provider = load()
    texts = [transcribe(clips[0].audio)]
    cold_ms = 1000 * (time.perf_counter() - started)
    warm: list[float] = []
    busy = 0.0
    for clip in clips[1:]:
        began = time.perf_counter()
        texts.append(transcribe(clip.audio))
        elapsed = time.perf_counter() - began
        busy += elapsed
        if clip.duration_s <= LATENCY_CLIP_S:
            warm.append(1000 * elapsed)
    score = corpus_wer((c.reference, t) for c, t in zip(clips, texts, strict=True))
    return MatrixCell(
        model=model,
        precision=precision,
        requested=requested,
        provider=provider,
        cold_ms=round(cold_ms, 1),
        warm_ms=round(statistics.median(warm), 1) if warm else 0.0,
        rtf=round(busy / max(sum(c.duration_s for c in clips[1:]), 1e-9), 4),
        wer=round(score.rate, 4),
        broken=broken_output(texts, clips),
    )
