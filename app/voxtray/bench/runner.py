"""`voxtray bench`: accuracy, latency and memory of each engine against a peer (faster-whisper
on the same CTranslate2 weights), measured in one process so that ratios are fair.

WER is over every clip of at most `max_clip_s`; latency statistics over clips of at most
10 s, each clip's latency being the median of `repeats` runs after a warm-up.
"""

from __future__ import annotations

import csv
import gc
import json
import os
import platform
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.audio.decode import load_audio
from voxtray.bench.live import StreamedClip, live_check
from voxtray.choices import Engine, Precision, Provider
from voxtray.errors import BadInputError, NotFoundError, disk_error
from voxtray.inference.assembly import Installer, build_pipeline, ensure_installed, load_recognizer
from voxtray.inference.engines import EngineChoice
from voxtray.inference.live import LiveOptions
from voxtray.inference.pipeline import DictationPipeline, chunked, paced
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.scoring.wer import corpus_wer

LATENCY_CLIP_S = 10.0
TranscribeFn = Callable[[NDArray[np.float32]], str]
Loader = Callable[[], tuple[TranscribeFn, str]]


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


MANIFEST_COLUMNS = ("id", "wav", "reference")


def manifest_rows(path: Path) -> list[dict[str, str]]:
    """The manifest's rows (id, wav, reference), in order.

    Raises:
        NotFoundError: No manifest there.
        BadInputError: Not a readable UTF-8 TSV file with the three columns.
    """
    if not path.exists():
        raise NotFoundError(f"{path}: no such manifest")
    if not path.is_file():
        raise BadInputError(f"{path}: the manifest is not a regular file")
    try:
        with path.open(encoding="utf-8", newline="") as stream:
            reader = csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE)
            rows = list(reader)
            columns = reader.fieldnames or []
    except UnicodeDecodeError:
        raise BadInputError(f"{path}: the manifest is not UTF-8 text") from None
    except (OSError, csv.Error) as exc:
        raise BadInputError(f"{path}: cannot read the manifest: {exc}") from None
    missing = [name for name in MANIFEST_COLUMNS if name not in columns]
    if missing:
        raise BadInputError(
            f"{path}: the manifest lacks the column(s) {', '.join(missing)} "
            f"(a TSV with a header line: {', '.join(MANIFEST_COLUMNS)})"
        )
    return rows


def load_manifest(path: Path, max_clip_s: float) -> list[BenchClip]:
    """The manifest's clips of at most `max_clip_s`, decoded to 16 kHz mono.

    Raises:
        BadInputError: A row without a clip, or no clip short enough to score.
    """
    clips = []
    rows = manifest_rows(path)
    for number, row in enumerate(rows, start=2):
        if not row["wav"]:
            raise BadInputError(f"{path}, line {number}: no clip in the wav column")
        audio = load_audio(path.parent / row["wav"])
        duration = audio.size / SAMPLE_RATE
        if duration <= max_clip_s:
            clip_id = row["id"] or f"line {number}"
            clips.append(BenchClip(clip_id, audio, duration, row["reference"] or ""))
    if not clips:
        what = f"no clip of at most {max_clip_s:g} s" if rows else "no clips"
        raise BadInputError(f"{path}: {what} to measure")
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
    load: Loader,
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


def faster_whisper_loader(ct2_dir: Path, threads: int) -> Loader:
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
    load: Loader,
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


# --- `voxtray bench`: the engines against the peer ------------------------------------------


@dataclass(frozen=True)
class BenchOptions:
    """What `voxtray bench` measures; the defaults are the command line's."""

    manifest: Path
    engines: tuple[Engine, ...] = (Engine.ORT, Engine.SHERPA)
    peer: bool = True
    model: str | None = None
    provider: Provider = Provider.CPU
    precision: Precision = Precision.INT8
    threads: int = 2
    repeats: int = 3
    max_clip_s: float = 28.0
    streaming_clip: str = "osr_us_000_0034_8k"
    json_out: Path | None = None
    live: bool = False
    live_max_clip_s: float = 25.0


def run_bench(
    store: ModelStore, options: BenchOptions, install: Installer | None = None
) -> dict[str, object]:
    """Measure the peer and each engine, write the report (`json_out`), print the table.

    Progress goes to stderr, the table to stdout. `install` installs missing models.
    """
    clips = load_manifest(options.manifest, options.max_clip_s)
    model = ensure_installed(store, options.model or store.catalog.default_stt, install=install)
    ensure_installed(store, store.catalog.default_vad, install=install)
    print(
        f"bench: {len(clips)} clips, model {model.name}, {options.threads} threads",
        file=sys.stderr,
    )
    peer = None
    if options.peer:
        loader = faster_whisper_loader(model.path / "ct2", options.threads)
        peer = measure("faster-whisper", loader, clips, options.repeats)
        _report_engine(peer)
    results = []
    checks: dict[str, dict[str, object]] = {}
    for engine in options.engines:
        choice = EngineChoice(
            engine=engine,
            provider=options.provider,
            precision=options.precision,
            threads=options.threads,
        )
        result = measure(engine.value, recognizer_loader(model, choice), clips, options.repeats)
        results.append(result)
        _report_engine(result)
        pipeline = build_pipeline(store, choice, model_name=model.name, install=install)
        checks[engine.value] = pipeline_checks(pipeline, options.manifest, options.streaming_clip)
        if options.live:
            checks[engine.value]["live"] = live_check(
                pipeline, streamed_clips(options.manifest, options.live_max_clip_s), LiveOptions()
            )
        print(f"  {engine.value} checks: {json.dumps(checks[engine.value])}", file=sys.stderr)
    add_ratios(results, peer)
    measured = ([peer] if peer else []) + results
    report: dict[str, object] = {
        "model": model.name,
        "precision": options.precision.value,
        "threads": options.threads,
        "clips": len(clips),
        "machine": machine_info(),
        "results": [r.summary() for r in measured],
        "checks": checks,
        "texts": {r.name: r.texts for r in measured},
    }
    if options.json_out:
        text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
        try:
            options.json_out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise disk_error(exc, str(options.json_out)) from None
    for result in measured:
        _print_row(result)
    return report


def recognizer_loader(model: InstalledModel, choice: EngineChoice) -> Loader:
    """Loads the recogniser unwarmed, so that `measure` times the first call too."""

    def load() -> tuple[TranscribeFn, str]:
        recognizer = load_recognizer(model, choice, warm=False)
        return (lambda audio: recognizer.transcribe(audio).text), recognizer.provider

    return load


def _report_engine(result: EngineResult) -> None:
    print(
        f"  {result.name}: WER {result.wer:.2%}, median {result.median_ms:.0f} ms",
        file=sys.stderr,
    )


def _print_row(result: EngineResult) -> None:
    ratio = f" ratio {result.ratio_to_peer:.2f}" if result.ratio_to_peer else ""
    print(
        f"{result.name:<16} WER {result.wer:6.2%}  median {result.median_ms:6.0f} ms  "
        f"p90 {result.p90_ms:6.0f} ms  RTF {result.rtf:.3f}  RSS {result.peak_rss_mb:.0f} MB  "
        f"{result.provider}{ratio}"
    )


def pipeline_checks(
    pipeline: DictationPipeline, manifest: Path, streaming_clip: str
) -> dict[str, object]:
    """Text on 10 s of silence and of noise (should be empty), and, for `streaming_clip`,
    the time from release to text when the clip is streamed at real time."""
    recognizer = pipeline.recognizer
    rng = np.random.default_rng(0)
    silence = np.zeros(10 * SAMPLE_RATE, np.float32)
    noise = (rng.standard_normal(10 * SAMPLE_RATE) * 0.1).astype(np.float32)
    checks: dict[str, object] = {
        "silence_text": recognizer.transcribe(silence).text,
        "noise_text": recognizer.transcribe(noise).text,
        "silence_pipeline_text": pipeline.transcribe(chunked(silence)).text,
        "noise_pipeline_text": pipeline.transcribe(chunked(noise)).text,
    }
    if streaming_clip:
        rows = {row["id"]: row for row in manifest_rows(manifest)}
        if streaming_clip in rows:
            audio = load_audio(manifest.parent / rows[streaming_clip]["wav"])
            checks["streaming"] = _streaming_check(pipeline, streaming_clip, audio)
    return checks


def _streaming_check(
    pipeline: DictationPipeline, clip: str, audio: NDArray[np.float32]
) -> dict[str, object]:
    began = time.perf_counter()
    pipeline.transcribe(chunked(audio))
    whole_ms = 1000 * (time.perf_counter() - began)
    tenth = SAMPLE_RATE // 10
    streamed = pipeline.transcribe(paced(chunked(audio, tenth)))
    # Released the moment the last word ends: the last segment is still open then, which
    # is the hard case for push-to-talk.
    cut = pipeline.transcribe(paced(chunked(trim_trailing_quiet(audio), tenth)))
    return {
        "clip": clip,
        "audio_s": round(audio.size / SAMPLE_RATE, 2),
        "whole_file_ms": round(whole_ms, 1),
        "release_to_text_ms": round(streamed.release_to_text_ms, 1),
        "ratio": round(streamed.release_to_text_ms / whole_ms, 3),
        "release_at_last_word_ms": round(cut.release_to_text_ms, 1),
        "ratio_at_last_word": round(cut.release_to_text_ms / whole_ms, 3),
        "segments": len(streamed.segments),
    }


def streamed_clips(manifest: Path, max_clip_s: float) -> list[StreamedClip]:
    """The manifest's clips of at most `max_clip_s`, each cut at its last word."""
    return [
        StreamedClip(clip.id, trim_trailing_quiet(clip.audio), clip.reference)
        for clip in load_manifest(manifest, max_clip_s)
    ]


def trim_trailing_quiet(
    audio: NDArray[np.float32], floor_dbfs: float = -40.0
) -> NDArray[np.float32]:
    """Cut the audio after its last 10 ms frame louder than `floor_dbfs`."""
    frame = SAMPLE_RATE // 100
    frames = audio[: audio.size - audio.size % frame].reshape(-1, frame)
    loud = np.flatnonzero(np.sqrt(np.mean(frames**2, axis=1)) > 10 ** (floor_dbfs / 20))
    return audio[: (int(loud[-1]) + 1) * frame] if loud.size else audio
