"""Tests for the Silero VAD wrapper and the streaming segmenter, on real speech."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import onnxruntime as ort
import pytest
from numpy.typing import NDArray

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.models import ensure_installed
from voxtray.audio import SAMPLE_RATE
from voxtray.inference.vad import (
    SileroVad,
    SpeechSegment,
    VadOptions,
    VadSegmenter,
    detect_speech,
)
from voxtray.models.store import ModelStore

FRAME = SileroVad.FRAME
PAD = VadOptions().speech_pad_ms / 1000


@pytest.fixture(scope="module")
def vad(model_store: ModelStore) -> SileroVad:
    path = ensure_installed(model_store, "silero-vad-v6").variant_files("fp32")["model"]
    return SileroVad(path)


def _clip(name: str) -> NDArray[np.float32]:
    path = SPEECH_DIR / "wav" / f"{name}.wav"
    if not path.is_file():
        pytest.skip(f"evaluation clip not found at {path}")
    return read_wav(path)


def _silence(seconds: float) -> NDArray[np.float32]:
    return np.zeros(round(seconds * SAMPLE_RATE), dtype=np.float32)


def _energy_span(audio: NDArray[np.float32], below_peak_db: float = 25.0) -> tuple[float, float]:
    """First and last 10 ms window within ``below_peak_db`` of the loudest, in seconds; an
    estimate of the speech span that owes nothing to the VAD."""
    hop = SAMPLE_RATE // 100
    windows = audio[: audio.size // hop * hop].reshape(-1, hop).astype(np.float64)
    level = 10 * np.log10(np.mean(windows**2, axis=1) + 1e-12)
    loud = np.flatnonzero(level > level.max() - below_peak_db)
    return loud[0] / 100, (loud[-1] + 1) / 100


def _probabilities(vad: SileroVad, audio: NDArray[np.float32]) -> NDArray[np.float64]:
    vad.reset()
    count = audio.size // FRAME
    return np.array([vad(audio[i * FRAME : (i + 1) * FRAME]) for i in range(count)])


def _feed_in_chunks(
    segmenter: VadSegmenter, audio: NDArray[np.float32], seed: int, largest: int = 5000
) -> list[SpeechSegment]:
    rng = np.random.default_rng(seed)
    segments: list[SpeechSegment] = []
    at = 0
    while at < audio.size:
        size = int(rng.integers(1, largest + 1))
        segments += segmenter.feed(audio[at : at + size])
        at += size
    return segments + segmenter.flush()


def _assert_audio_matches(segments: list[SpeechSegment], audio: NDArray[np.float32]) -> None:
    for segment in segments:
        assert 0 <= segment.start < segment.end <= audio.size
        np.testing.assert_array_equal(segment.audio, audio[segment.start : segment.end])
    for before, after in itertools.pairwise(segments):
        assert before.end <= after.start, "segments overlap"


@pytest.mark.parametrize("name", ["ls_1089-134686-0000", "timit_ldc93s1", "harvard_sb_example1"])
def test_one_utterance_in_silence_is_one_padded_segment(vad: SileroVad, name: str) -> None:
    clip = _clip(name)
    audio = np.concatenate((_silence(1.5), clip, _silence(1.5)))
    onset, offset = (1.5 + t for t in _energy_span(clip))

    segments = detect_speech(audio, vad)

    assert len(segments) == 1
    (segment,) = segments
    assert onset - PAD - 0.05 <= segment.start_s <= onset
    # The trailing pad starts where the model's probability falls, a little after the
    # energy does.
    assert offset + PAD <= segment.end_s <= offset + PAD + 0.2
    assert not segment.split
    _assert_audio_matches(segments, audio)


def test_two_utterances_apart_are_two_segments(vad: SileroVad) -> None:
    first, second = _clip("harvard_sb_example1"), _clip("timit_ldc93s1")
    gap = _silence(2.0)
    audio = np.concatenate((first, gap, second))
    second_at = (first.size + gap.size) / SAMPLE_RATE

    segments = detect_speech(audio, vad)

    assert len(segments) == 2
    onset, offset = _energy_span(first)
    assert segments[0].start_s <= onset
    assert segments[0].end_s >= offset + PAD
    assert segments[0].end_s < first.size / SAMPLE_RATE + PAD + 0.1
    onset, offset = (second_at + t for t in _energy_span(second))
    assert segments[1].start_s <= onset
    assert segments[1].end_s >= offset
    assert segments[1].start_s > second_at - PAD - 0.05
    _assert_audio_matches(segments, audio)


@pytest.mark.parametrize("kind", ["silence", "white noise"])
def test_no_segments_without_speech(vad: SileroVad, kind: str) -> None:
    if kind == "silence":
        audio = _silence(10.0)
    else:
        audio = np.random.default_rng(0).normal(0.0, 0.1, 10 * SAMPLE_RATE).astype(np.float32)
    segmenter = VadSegmenter(vad)
    assert segmenter.feed(audio) == []
    assert segmenter.frames_seen == audio.size // FRAME
    assert not segmenter.speech_active
    assert segmenter.last_probability < 0.1
    assert segmenter.flush() == []


@pytest.mark.parametrize(
    "options",
    [
        VadOptions(),
        VadOptions(max_segment_s=4.0),
        # Pad longer than the silence that ends speech: segments wait for their trailing
        # pad, and new speech inside it shares the gap.
        VadOptions(min_silence_ms=150, speech_pad_ms=500),
    ],
    ids=["default", "split", "long-pad"],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_chunk_sizes_do_not_change_segments(vad: SileroVad, options: VadOptions, seed: int) -> None:
    audio = np.concatenate((_clip("jfk_inaugural"), _silence(0.7), _clip("uberi_one_two_three")))
    whole = detect_speech(audio, vad, options)
    assert len(whole) >= 3

    chunked = _feed_in_chunks(VadSegmenter(vad, options), audio, seed)

    assert chunked == whole
    _assert_audio_matches(chunked, audio)


def test_segmenter_is_reusable_after_flush_and_reset(vad: SileroVad) -> None:
    audio = _clip("uberi_one_two_three")
    expected = detect_speech(audio, vad)
    segmenter = VadSegmenter(vad)
    assert segmenter.feed(audio[:20000]) + segmenter.flush() != []
    assert segmenter.feed(audio) + segmenter.flush() == expected
    segmenter.feed(audio[:20000])
    segmenter.reset()
    assert segmenter.frames_seen == 0
    assert segmenter.feed(audio) + segmenter.flush() == expected


def test_state_is_reported_while_streaming(vad: SileroVad) -> None:
    clip = _clip("ls_1089-134686-0000")
    segmenter = VadSegmenter(vad)
    onset, _ = _energy_span(clip)
    middle = round((onset + 1.0) * SAMPLE_RATE)
    assert segmenter.feed(clip[:middle]) == []
    assert segmenter.speech_active
    assert segmenter.frames_seen == middle // FRAME
    assert 0.0 <= segmenter.last_probability <= 1.0
    assert segmenter.vad_seconds > 0.0
    frames = segmenter.frames_seen
    assert len(segmenter.flush()) == 1
    # Counters stay readable after the end of the stream, for the pipeline's report.
    assert segmenter.frames_seen == frames
    assert segmenter.vad_seconds > 0.0
    assert not segmenter.speech_active
    assert segmenter.buffered_samples == 0


def test_a_pause_is_measured_and_closes_as_it_was_seen(vad: SileroVad) -> None:
    clip = _clip("harvard_sb_example1")
    segmenter = VadSegmenter(vad)
    assert segmenter.quiet_ms == math.inf  # nothing said yet
    assert segmenter.feed(clip[:SAMPLE_RATE]) == []
    assert segmenter.quiet_ms < math.inf  # a segment is open
    segmenter.feed(clip[SAMPLE_RATE:])
    segmenter.feed(_silence(0.15))
    assert 100 <= segmenter.quiet_ms < 400
    ending = segmenter.ending_segment()
    assert ending is not None
    assert ending.speech_end is not None
    assert ending.start < ending.speech_end < ending.end
    # The VAD's own close, after min_silence, holds the same speech.
    closed = segmenter.feed(_silence(1.0))
    assert [(s.start, s.speech_end) for s in closed] == [(ending.start, ending.speech_end)]
    assert closed[0].end >= ending.end
    np.testing.assert_array_equal(closed[0].audio[: ending.audio.size], ending.audio)
    assert segmenter.quiet_ms == math.inf
    assert segmenter.ending_segment() is None


def test_a_release_during_a_pause_flushes_the_segment_that_was_seen(vad: SileroVad) -> None:
    clip = _clip("harvard_sb_example1")
    segmenter = VadSegmenter(vad)
    segmenter.feed(np.concatenate([clip, _silence(0.15)]))
    ending = segmenter.ending_segment()
    assert ending is not None
    assert segmenter.flush() == [ending]
    assert ending.speech_end is not None


def _check_split_run(
    segments: list[SpeechSegment],
    audio: NDArray[np.float32],
    probabilities: NDArray[np.float64],
    options: VadOptions,
) -> int:
    """Checks every split of ``segments``; returns how many there were."""
    cap = round(options.max_segment_s * SAMPLE_RATE)
    splits = 0
    for index, segment in enumerate(segments):
        assert segment.end - segment.start <= cap
        if not segment.split:
            continue
        splits += 1
        following = segments[index + 1]
        assert following.start == segment.end, "a split lost or repeated audio"
        # Cut in the last third of a segment that had reached the cap.
        assert segment.end - segment.start >= cap * 2 // 3 - FRAME
        cut_frame = segment.end // FRAME
        assert probabilities[cut_frame] < options.threshold
        # No frame well inside the last third is quieter than the one cut at.
        window = probabilities[(segment.start + cap * 2 // 3) // FRAME + 1 : cut_frame]
        assert probabilities[cut_frame] <= window.min(initial=1.0)
    # The parts of each split run put together give back the audio between them.
    runs = np.concatenate([s.audio for s in segments[: splits + 1]])
    np.testing.assert_array_equal(runs, audio[segments[0].start : segments[splits].end])
    return splits


@pytest.mark.parametrize(
    ("name", "options", "expected_splits"),
    [
        # The 35 s Harvard sentences read with short pauses, held together by a long
        # min_silence so that one segment runs past 25 s.
        ("osr_us_000_0034_8k", VadOptions(min_silence_ms=2000), 1),
        # 16.7 s of continuous reading under an 8 s cap.
        ("ls_triton_1221-135766-0001", VadOptions(max_segment_s=8.0), 2),
    ],
)
def test_long_speech_is_split_at_a_quiet_frame(
    vad: SileroVad, name: str, options: VadOptions, expected_splits: int
) -> None:
    audio = _clip(name)
    probabilities = _probabilities(vad, audio)
    segmenter = VadSegmenter(vad, options)
    largest_buffer = 0
    segments: list[SpeechSegment] = []
    for at in range(0, audio.size, 4000):
        segments += segmenter.feed(audio[at : at + 4000])
        largest_buffer = max(largest_buffer, segmenter.buffered_samples)
    segments += segmenter.flush()

    assert _check_split_run(segments, audio, probabilities, options) == expected_splits
    _assert_audio_matches(segments, audio)
    assert segments == detect_speech(audio, vad, options)
    assert largest_buffer <= (options.max_segment_s + PAD + 0.1) * SAMPLE_RATE


def test_memory_stays_bounded_on_long_silence(vad: SileroVad) -> None:
    segmenter = VadSegmenter(vad)
    chunk = _silence(0.1)
    largest = 0
    for _ in range(6000):  # ten minutes
        assert segmenter.feed(chunk) == []
        largest = max(largest, segmenter.buffered_samples)
    assert segmenter.frames_seen == 6000 * chunk.size // FRAME
    assert largest <= 2 * SAMPLE_RATE


def test_short_bursts_are_ignored(vad: SileroVad) -> None:
    clip = _clip("ls_1089-134686-0000")
    onset, _ = _energy_span(clip)
    start = round(onset * SAMPLE_RATE)
    audio = np.concatenate((_silence(1.0), clip[start : start + 2500], _silence(1.0)))
    probabilities = _probabilities(vad, audio)
    assert probabilities.max() >= 0.5, "the burst should look like speech to the model"

    assert detect_speech(audio, vad) == []
    assert len(detect_speech(audio, vad, VadOptions(min_speech_ms=50))) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 0.0}, "threshold"),
        ({"threshold": 1.0}, "threshold"),
        ({"threshold": 0.5, "neg_threshold": 0.6}, "neg_threshold"),
        ({"neg_threshold": -0.1}, "neg_threshold"),
        ({"min_speech_ms": -1}, "min_speech_ms"),
        ({"min_silence_ms": -1}, "min_silence_ms"),
        ({"speech_pad_ms": -1}, "speech_pad_ms"),
        ({"max_segment_s": 25.5}, "max_segment_s"),
        ({"max_segment_s": 0.5}, "max_segment_s"),
        ({"max_segment_s": float("nan")}, "max_segment_s"),
        ({"max_segment_s": 2.0, "min_speech_ms": 2000}, "min_speech_ms"),
    ],
)
def test_options_are_validated(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VadOptions(**kwargs)  # type: ignore[arg-type]


def test_options_defaults() -> None:
    options = VadOptions()
    assert options.silence_threshold == pytest.approx(0.35)
    assert VadOptions(neg_threshold=0.2).silence_threshold == 0.2
    assert options.max_segment_s == 25.0


@pytest.mark.parametrize("shape", [(511,), (513,), (1, 512), (0,)])
def test_vad_rejects_wrong_frames(vad: SileroVad, shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="512"):
        vad(np.zeros(shape, dtype=np.float32))


def test_vad_scores_speech_above_silence(vad: SileroVad) -> None:
    clip = _clip("ls_1089-134686-0000")
    probabilities = _probabilities(vad, clip)
    assert probabilities.max() > 0.9
    assert np.median(probabilities) > 0.5
    assert _probabilities(vad, _silence(1.0)).max() < 0.1
    # Same frames, same state: the result does not depend on what came before a reset.
    np.testing.assert_array_equal(_probabilities(vad, clip), probabilities)


def test_vad_matches_the_model_driven_by_hand(vad: SileroVad) -> None:
    """The v6 protocol: each call sees the last 64 samples of the previous frame first."""
    clip = _clip("timit_ldc93s1")
    session = ort.InferenceSession(str(vad.model_path), providers=["CPUExecutionProvider"])
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros(64, dtype=np.float32)
    expected = []
    for i in range(clip.size // FRAME):
        frame = clip[i * FRAME : (i + 1) * FRAME]
        window = np.concatenate((context, frame))[np.newaxis, :]
        sr = np.array(SAMPLE_RATE, dtype=np.int64)
        probability, state = session.run(None, {"input": window, "state": state, "sr": sr})
        expected.append(float(probability[0, 0]))
        context = frame[-64:]

    np.testing.assert_allclose(_probabilities(vad, clip), expected, atol=1e-5)


def test_vad_speed(vad: SileroVad) -> None:
    audio = _clip("ls_1089-134686-0000")
    count = audio.size // FRAME
    vad.reset()
    started = time.perf_counter()
    for i in range(count):
        vad(audio[i * FRAME : (i + 1) * FRAME])
    per_frame = (time.perf_counter() - started) / count
    print(f"\nSilero VAD: {1 / per_frame:.0f} frames/s, {per_frame * 1e6:.0f} us/frame, one thread")
    # Real time is 31.25 frames/s; the pipeline needs the VAD to be a rounding error.
    assert per_frame < 2e-3
