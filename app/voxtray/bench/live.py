"""`voxtray bench --live`: live text measured on real clips streamed at real time, each
clip once with live text and once without, in the same run.

Every clip is cut at its last word and released there (the hard case: the last segment
is still open), so release-to-text covers the decode a release leaves. CPU figures are
this process's CPU time over wall time while streaming, in cores.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.inference.live import LiveOptions, LiveStats
from voxtray.inference.pipeline import DictationPipeline, chunked, paced
from voxtray.inference.recognizers.base import Recognizer, transcribe_with
from voxtray.scoring.wer import corpus_wer


@dataclass(frozen=True)
class StreamedClip:
    """One clip as the bench streams it: cut at the last word."""

    id: str
    audio: NDArray[np.float32]
    reference: str


@dataclass(frozen=True)
class _Run:
    text: str
    release_ms: float
    wall_s: float
    cpu_s: float
    stats: LiveStats | None
    released_at: float


def _stream(pipeline: DictationPipeline, clip: StreamedClip) -> _Run:
    wall, cpu = time.perf_counter(), time.process_time()
    record = pipeline.transcribe(paced(chunked(clip.audio, SAMPLE_RATE // 10)))
    wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    released_at = time.perf_counter() - record.release_to_text_ms / 1000
    stats = pipeline.live.stats if pipeline.live is not None else None
    return _Run(record.text, record.release_to_text_ms, wall_s, cpu_s, stats, released_at)


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _first_partial_ms(run: _Run) -> float | None:
    stats = run.stats
    if stats is None or stats.onset_at is None or not stats.emitted_at:
        return None
    first = stats.emitted_at[0]
    return 1000 * (first - stats.onset_at) if first < run.released_at else None


def _intervals_ms(run: _Run) -> list[float]:
    done = [t for t in (run.stats.refreshed_at if run.stats else []) if t < run.released_at]
    return [1000 * (b - a) for a, b in itertools.pairwise(done)]


def _final_decode_ms(recognizer: Recognizer, run: _Run, repeats: int = 3) -> tuple[float, float]:
    """The last segment's decode without and with its committed prefix, alternated, the
    median of each: the part of release-to-text live text changes, without the noise of
    real-time scheduling."""
    assert run.stats is not None
    assert run.stats.last_prefix is not None
    segment, prefix = run.stats.last_prefix
    plain, live = [], []
    for _ in range(repeats):
        began = time.perf_counter()
        recognizer.transcribe(segment.audio)
        plain.append(time.perf_counter() - began)
        began = time.perf_counter()
        transcribe_with(recognizer, segment.audio, prefix=prefix, check_prefix=True)
        live.append(time.perf_counter() - began)
    return 1000 * statistics.median(plain), 1000 * statistics.median(live)


def live_check(
    pipeline: DictationPipeline, clips: Sequence[StreamedClip], options: LiveOptions
) -> dict[str, object]:
    """Stream each clip at real time with live text, then without; the JSON summary."""
    live_runs: list[_Run] = []
    plain_runs: list[_Run] = []
    for clip in clips:
        pipeline.set_live(options, None)
        live_runs.append(_stream(pipeline, clip))
        pipeline.set_live(None, None)
        plain_runs.append(_stream(pipeline, clip))
    finals = [
        _final_decode_ms(pipeline.recognizer, run)
        for run in live_runs
        if run.stats and run.stats.last_prefix and run.stats.last_prefix[1]
    ]
    live_wer = corpus_wer((c.reference, r.text) for c, r in zip(clips, live_runs, strict=True))
    plain_wer = corpus_wer((c.reference, r.text) for c, r in zip(clips, plain_runs, strict=True))
    firsts = [ms for ms in map(_first_partial_ms, live_runs) if ms is not None]
    intervals = [ms for run in live_runs for ms in _intervals_ms(run)]
    live_wall = sum(r.wall_s for r in live_runs)
    decode_s = sum(sum(r.stats.decode_s) for r in live_runs if r.stats)
    return {
        "clips": len(clips),
        "audio_s": round(sum(c.audio.size for c in clips) / SAMPLE_RATE, 1),
        "interval_s": options.interval_s,
        "wer_live": round(live_wer.rate, 4),
        "wer_plain": round(plain_wer.rate, 4),
        "errors_live": live_wer.errors,
        "errors_plain": plain_wer.errors,
        "words": live_wer.words,
        "first_partial_ms_median": _median(firsts),
        "first_partial_ms_max": round(max(firsts), 1) if firsts else None,
        "clips_with_partial_before_release": len(firsts),
        "refresh_interval_ms_median": _median(intervals),
        "refreshes": sum(len(r.stats.decode_s) for r in live_runs if r.stats),
        "refreshes_skipped": sum(r.stats.skipped for r in live_runs if r.stats),
        "refreshes_interrupted": sum(r.stats.interrupted for r in live_runs if r.stats),
        "segments_reconciled": sum(r.stats.reconciled for r in live_runs if r.stats),
        "cpu_cores_live": round(sum(r.cpu_s for r in live_runs) / live_wall, 3),
        "cpu_cores_plain": round(
            sum(r.cpu_s for r in plain_runs) / sum(r.wall_s for r in plain_runs), 3
        ),
        "live_decode_busy": round(decode_s / live_wall, 3),
        "release_to_text_ms_live_median": _median([r.release_ms for r in live_runs]),
        "release_to_text_ms_plain_median": _median([r.release_ms for r in plain_runs]),
        "release_to_text_ms_live": [round(r.release_ms, 1) for r in live_runs],
        "release_to_text_ms_plain": [round(r.release_ms, 1) for r in plain_runs],
        "final_decode_clips_with_prefix": len(finals),
        "final_decode_ms_plain_median": _median([plain for plain, _ in finals]),
        "final_decode_ms_live_median": _median([live for _, live in finals]),
        "final_decode_live_to_plain_median": round(
            statistics.median([live / plain for plain, live in finals]), 3
        )
        if finals
        else None,
        "texts_live": {c.id: r.text for c, r in zip(clips, live_runs, strict=True)},
        "texts_plain": {c.id: r.text for c, r in zip(clips, plain_runs, strict=True)},
    }
