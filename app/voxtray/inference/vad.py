"""Silero VAD v6 on onnxruntime, and a streaming segmenter that cuts speech into utterances.

The segmenter turns a stream of 16 kHz samples into padded speech segments no longer than
the recogniser's window. Its state machine follows Silero's own ``get_speech_timestamps``
(start on ``threshold``, end after ``min_silence_ms`` below ``neg_threshold``) but works
on chunks of any size, keeps only the audio a segment can still need, and splits long
speech at its quietest frame instead of at a fixed length.
"""

from __future__ import annotations

import collections
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnxruntime as ort
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE

MAX_SEGMENT_S = 25.0  # Whisper reads 30 s windows; the rest is headroom for padding
_CONTEXT = 64  # samples of the previous frame the v6 model expects in front of each frame


@dataclass(frozen=True)
class VadOptions:
    """How speech probabilities become segments.

    Attributes:
        threshold: Probability at or above which a frame counts as speech.
        neg_threshold: Probability below which a frame counts as silence; frames in
            between keep the current state. None means ``threshold - 0.15``.
        min_speech_ms: Segments with less speech than this are dropped as noise bursts.
        min_silence_ms: Silence needed to end a segment.
        speech_pad_ms: Audio kept before and after the speech, so that soft first and
            last sounds are not clipped.
        max_segment_s: Hard cap on a segment's length, padding included; longer speech is
            split at its quietest frame. At most 25 s.
    """

    threshold: float = 0.5
    neg_threshold: float | None = None
    min_speech_ms: int = 250
    min_silence_ms: int = 400
    speech_pad_ms: int = 300
    max_segment_s: float = MAX_SEGMENT_S

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")
        neg = self.silence_threshold
        if not 0.0 <= neg <= self.threshold:
            raise ValueError(f"neg_threshold must be in [0, threshold={self.threshold}], got {neg}")
        for name in ("min_speech_ms", "min_silence_ms", "speech_pad_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not math.isfinite(self.max_segment_s) or not 1.0 <= self.max_segment_s <= 25.0:
            raise ValueError(f"max_segment_s must be in [1, 25], got {self.max_segment_s}")
        if self.min_speech_ms >= self.max_segment_s * 1000:
            raise ValueError(
                f"min_speech_ms ({self.min_speech_ms}) must be shorter than max_segment_s "
                f"({self.max_segment_s} s)"
            )

    @property
    def silence_threshold(self) -> float:
        """The effective ``neg_threshold``."""
        if self.neg_threshold is None:
            return max(self.threshold - 0.15, 0.01)
        return self.neg_threshold


def _load_error(model_path: Path, exc: Exception) -> Exception:
    from voxtray.errors import CorruptError, DamagedModelError

    reason = (str(exc).splitlines() or [exc.__class__.__name__])[0][:200]
    message = f"voice-activity model {model_path} cannot be loaded: {reason}"
    if (model_path.parent / "manifest.json").is_file():  # installed: the store can repair it
        return DamagedModelError(message, model_path.parent.name)
    return CorruptError(message)


class SileroVad:
    """Silero VAD v6: speech probability of 512-sample frames at 16 kHz, with state.

    Not thread-safe, and the recurrent state belongs to one stream: give each stream its
    own instance, or ``reset()`` between streams.
    """

    FRAME = 512

    def __init__(self, model_path: Path, *, intra_op_threads: int = 1) -> None:
        """Loads the model on the CPU provider.

        The model needs about 0.1 ms per frame on one core, so the CPU is the right place
        even on machines with a GPU: no transfers, and the GPU stays free for the
        recogniser.

        Args:
            model_path: The ``silero_vad.onnx`` file.
            intra_op_threads: onnxruntime threads per call; one is plenty.

        Raises:
            CorruptError: If onnxruntime cannot load the file (truncated, not ONNX).
            ValueError: If the model does not take Silero's inputs.
        """
        self.model_path = model_path
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's own types: InvalidProtobuf, NoSuchFile, Fail
            raise _load_error(model_path, exc) from None
        names = {node.name for node in self._session.get_inputs()}
        if names != {"input", "state", "sr"}:
            raise ValueError(f"{model_path} is not Silero VAD v5/v6: its inputs are {names}")
        self._sr = np.array(SAMPLE_RATE, dtype=np.int64)
        self._input = np.zeros((1, _CONTEXT + self.FRAME), dtype=np.float32)
        self._state = np.zeros((2, 1, 128), dtype=np.float32)

    def reset(self) -> None:
        """Forgets the recurrent state and the context, as at the start of a stream."""
        self._input.fill(0.0)
        self._state = np.zeros((2, 1, 128), dtype=np.float32)

    def __call__(self, frame: NDArray[np.float32]) -> float:
        """Speech probability of the next frame of the stream.

        Args:
            frame: Exactly 512 samples in [-1, 1].

        Returns:
            The probability in [0, 1].

        Raises:
            ValueError: If the frame is not one-dimensional with 512 samples.
        """
        if frame.shape != (self.FRAME,):
            raise ValueError(f"SileroVad needs frames of shape ({self.FRAME},), got {frame.shape}")
        self._input[0, _CONTEXT:] = frame
        probability, self._state = self._session.run(
            None, {"input": self._input, "state": self._state, "sr": self._sr}
        )
        # The next frame sees the tail of this one as its context.
        self._input[0, :_CONTEXT] = self._input[0, -_CONTEXT:]
        return float(probability[0, 0])


@dataclass(frozen=True)
class SpeechSegment:
    """A piece of the stream with speech in it.

    Attributes:
        start: First sample, counted from the start of the stream, padding included.
        end: One past the last sample.
        audio: The samples ``[start, end)``.
        split: True when the segment was cut at ``max_segment_s``; the next segment then
            starts exactly at ``end``.
        speech_end: Where its speech ended, before the trailing pad (None for a split
            part); two segments with the same start and speech end hold the same speech.
    """

    start: int
    end: int
    audio: NDArray[np.float32]
    split: bool = False
    speech_end: int | None = None

    @property
    def start_s(self) -> float:
        """Start in seconds."""
        return self.start / SAMPLE_RATE

    @property
    def end_s(self) -> float:
        """End in seconds."""
        return self.end / SAMPLE_RATE

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return (self.end - self.start) / SAMPLE_RATE

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SpeechSegment):
            return NotImplemented
        return (self.start, self.end, self.split) == (other.start, other.end, other.split) and (
            np.array_equal(self.audio, other.audio)
        )

    def __hash__(self) -> int:
        return hash((self.start, self.end, self.split))


class _Frame(NamedTuple):
    """A scored frame kept while a segment may still need it."""

    samples: NDArray[np.float32]
    probability: float
    energy: float


@dataclass
class _Open:
    """The segment being built."""

    start: int  # first sample to emit, pre-roll included
    speech_start: int  # first speech frame
    silence_start: int | None = None  # first frame of the current run of silence
    speech_end: int | None = None  # set once min_silence has passed; waiting for the pad


class VadSegmenter:
    """Streaming speech segmentation of 16 kHz audio.

    Feed chunks of any size; finished segments come back as soon as their trailing pad
    has arrived. Audio older than the pre-roll is dropped unless a segment still needs it,
    so memory stays bounded by about ``max_segment_s`` plus the padding.

    Speech longer than ``max_segment_s`` is cut in the middle of the frame with the lowest
    probability (then lowest energy) in the last third of the segment; the part before
    the cut comes back with ``split=True`` and the segment goes on from the cut sample.
    Every segment, split parts included, must hold ``min_speech_ms`` of speech, so a
    remainder after a cut that holds only trailing silence is dropped.

    Attributes:
        frames_seen: 512-sample frames scored in this stream.
        last_probability: Speech probability of the latest frame.
        vad_seconds: Wall time spent in the model during this stream.
    """

    def __init__(self, vad: SileroVad, options: VadOptions = VadOptions()) -> None:
        """Creates a segmenter that owns ``vad``'s state from now on.

        Args:
            vad: The model; it is reset here and on every ``reset()``.
            options: Thresholds and durations.
        """
        self.vad = vad
        self.options = options
        ms = SAMPLE_RATE // 1000
        self._pad = options.speech_pad_ms * ms
        self._min_speech = options.min_speech_ms * ms
        self._min_silence = options.min_silence_ms * ms
        self._max = round(options.max_segment_s * SAMPLE_RATE)
        self._neg = options.silence_threshold
        self.reset()

    def reset(self) -> None:
        """Starts a new stream: drops buffered audio, open speech and the counters."""
        self.vad.reset()
        self._frames: collections.deque[_Frame] = collections.deque()
        self._first_frame = 0  # stream index of self._frames[0]
        self._tail = np.zeros(0, dtype=np.float32)  # samples short of a whole frame
        self._open: _Open | None = None
        self._last_end = 0  # nothing before this may go into a new segment
        self._ended = False  # flushed: the next feed() starts a new stream
        self.frames_seen = 0
        self.last_probability = 0.0
        self.vad_seconds = 0.0

    @property
    def speech_active(self) -> bool:
        """True from a speech onset until its silence has lasted ``min_silence_ms``."""
        return self._open is not None and self._open.speech_end is None

    @property
    def quiet_ms(self) -> float:
        """How long the speaker has been quiet: 0 while speech goes on, the length of the
        current pause inside a segment, infinity when no segment is open."""
        seg = self._open
        if seg is None or seg.speech_end is not None:
            return math.inf
        if seg.silence_start is None:
            return 0.0
        return 1000 * (self._pos - seg.silence_start) / SAMPLE_RATE

    def ending_segment(self) -> SpeechSegment | None:
        """The segment as ``flush()`` would close it now, while its speech has paused but
        ``min_silence_ms`` has not passed yet; None otherwise."""
        seg = self._open
        if seg is None or seg.speech_end is not None or seg.silence_start is None:
            return None
        speech_end = seg.silence_start
        if speech_end - max(seg.speech_start, seg.start) < self._min_speech:
            return None
        end = min(speech_end + self._pad, self._pos + self._tail.size, seg.start + self._max)
        return SpeechSegment(seg.start, end, self._audio(seg.start, end), speech_end=speech_end)

    def paused_speech(self) -> tuple[int, int] | None:
        """(start, speech end) of the open segment while its speech has paused or ended
        and it waits for its trailing pad; None otherwise."""
        seg = self._open
        if seg is None:
            return None
        end = seg.speech_end if seg.speech_end is not None else seg.silence_start
        return None if end is None else (seg.start, end)

    @property
    def buffered_samples(self) -> int:
        """Samples held in memory, the partial frame included."""
        return len(self._frames) * SileroVad.FRAME + self._tail.size

    def open_segment(self) -> SpeechSegment | None:
        """The segment being spoken, from its first sample to the latest one received;
        None unless speech is active. The segment that closes later starts at the same
        sample (unless a split at ``max_segment_s`` comes first)."""
        seg = self._open
        if seg is None or seg.speech_end is not None:
            return None
        end = self._pos + self._tail.size
        return SpeechSegment(seg.start, end, self._audio(seg.start, end))

    @property
    def speech_onset(self) -> int | None:
        """First speech frame of the open segment, in stream samples; None without one."""
        return None if self._open is None else self._open.speech_start

    @property
    def _pos(self) -> int:
        return self.frames_seen * SileroVad.FRAME

    def feed(self, samples: NDArray[np.float32]) -> list[SpeechSegment]:
        """Adds audio to the stream.

        Args:
            samples: One-dimensional 16 kHz samples in [-1, 1], any number of them.

        Returns:
            Segments finished by this chunk, in stream order.
        """
        chunk = np.asarray(samples, dtype=np.float32)
        if chunk.ndim != 1:
            raise ValueError(f"feed() takes one-dimensional audio, got shape {chunk.shape}")
        if self._ended:
            self.reset()
        data = np.concatenate((self._tail, chunk)) if self._tail.size else chunk
        whole = data.size - data.size % SileroVad.FRAME
        out: list[SpeechSegment] = []
        for offset in range(0, whole, SileroVad.FRAME):
            # Copied so that the buffer does not pin the caller's chunk.
            self._step(data[offset : offset + SileroVad.FRAME].copy(), out)
        self._tail = data[whole:].copy()
        return out

    def flush(self) -> list[SpeechSegment]:
        """Ends the stream and closes the open segment, if any, at the last sample.

        The partial frame at the end is not scored but is kept as audio. The buffered
        audio is released; ``frames_seen``, ``vad_seconds`` and ``last_probability`` stay
        readable until the next ``feed()``, which starts a new stream at sample 0.

        Returns:
            The remaining segments, in stream order.
        """
        out: list[SpeechSegment] = []
        seg = self._open
        end = self._pos + self._tail.size
        if seg is not None:
            speech_end = seg.speech_end if seg.speech_end is not None else seg.silence_start
            if speech_end is None:  # speech runs to the end of the stream
                if end - seg.start > self._max:
                    self._split(out)
                self._close(end, end, out)
            else:
                self._close(speech_end, min(speech_end + self._pad, end), out)
        self._open = None
        self._frames.clear()
        self._tail = np.zeros(0, dtype=np.float32)
        self._ended = True
        return out

    def _step(self, frame: NDArray[np.float32], out: list[SpeechSegment]) -> None:
        started = time.perf_counter()
        probability = self.vad(frame)
        self.vad_seconds += time.perf_counter() - started
        self.last_probability = probability
        self._frames.append(_Frame(frame, probability, float(np.dot(frame, frame))))
        frame_start = self._pos
        self.frames_seen += 1

        seg = self._open
        if seg is not None and seg.speech_end is not None and probability >= self.options.threshold:
            # New speech inside the trailing pad: share the gap, as Silero does offline.
            gap = frame_start - seg.speech_end
            self._close(seg.speech_end, seg.speech_end + min(self._pad, gap // 2), out)
        if self._open is None:
            if probability >= self.options.threshold:
                start = max(frame_start - self._pad, self._last_end)
                self._open = _Open(start=start, speech_start=frame_start)
        elif self._open.speech_end is None:
            self._track_speech(probability, frame_start, out)
        self._finish_pad(out)
        self._trim()

    def _track_speech(self, probability: float, frame_start: int, out: list[SpeechSegment]) -> None:
        seg = self._open
        assert seg is not None
        if probability >= self.options.threshold:
            seg.silence_start = None
        elif probability < self._neg:
            if seg.silence_start is None:
                seg.silence_start = frame_start
            if self._pos - seg.silence_start >= self._min_silence:
                seg.speech_end = seg.silence_start
                return
        if self._pos - seg.start >= self._max:
            self._split(out)

    def _finish_pad(self, out: list[SpeechSegment]) -> None:
        seg = self._open
        if seg is None or seg.speech_end is None:
            return
        end = seg.speech_end + self._pad
        if self._pos >= end:
            self._close(seg.speech_end, end, out)

    def _close(self, speech_end: int, end: int, out: list[SpeechSegment]) -> None:
        """Ends the open segment at ``end``; drops it if it holds too little speech."""
        seg = self._open
        assert seg is not None
        self._open = None
        # After a split the segment's own speech starts at the cut.
        if speech_end - max(seg.speech_start, seg.start) < self._min_speech:
            return
        # The trailing pad may not push a segment past the cap (speech itself cannot).
        end = min(end, seg.start + self._max)
        audio = self._audio(seg.start, end)
        out.append(SpeechSegment(seg.start, end, audio, speech_end=speech_end))
        self._last_end = end

    def _split(self, out: list[SpeechSegment]) -> None:
        """Emits the open segment up to its quietest frame in the last third."""
        seg = self._open
        assert seg is not None
        cut = self._quietest_point(seg.start)
        out.append(SpeechSegment(seg.start, cut, self._audio(seg.start, cut), split=True))
        seg.start = cut
        self._last_end = cut

    def _quietest_point(self, start: int) -> int:
        """Middle of the frame with the lowest probability (then energy) in the last third
        of ``[start, pos)`` whose middle keeps the first part within the cap."""
        size = SileroVad.FRAME
        first = -(-(start + 2 * (self._pos - start) // 3) // size)
        last = min(self.frames_seen, (start + self._max - size // 2) // size + 1)
        frames = [self._frames[index - self._first_frame] for index in range(first, last)]
        quietest = min(range(len(frames)), key=lambda i: (frames[i].probability, frames[i].energy))
        best = first + quietest
        return best * size + size // 2

    def _audio(self, start: int, end: int) -> NDArray[np.float32]:
        size = SileroVad.FRAME
        first = start // size
        last = min(-(-end // size), self.frames_seen)
        parts = [self._frames[index - self._first_frame].samples for index in range(first, last)]
        if end > self._pos:
            parts.append(self._tail)
        audio = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
        return audio[start - first * size : end - first * size]

    def _trim(self) -> None:
        """Drops frames that no segment can reach any more."""
        if self._open is not None:
            keep_from = self._open.start
        else:
            keep_from = max(self._pos - self._pad, self._last_end)
        drop = keep_from // SileroVad.FRAME - self._first_frame
        for _ in range(max(drop, 0)):
            self._frames.popleft()
        self._first_frame += max(drop, 0)


def detect_speech(
    audio: NDArray[np.float32],
    vad: SileroVad,
    options: VadOptions = VadOptions(),
) -> list[SpeechSegment]:
    """Speech segments of a whole recording.

    Args:
        audio: One-dimensional 16 kHz samples in [-1, 1].
        vad: The model; its state is reset first.
        options: Thresholds and durations.

    Returns:
        The segments in order, as a streaming segmenter would produce them.
    """
    segmenter = VadSegmenter(vad, options)
    return segmenter.feed(audio) + segmenter.flush()
