"""The inference side of `voxtray serve`: one worker thread, a bounded queue, and the
transcription job that the HTTP and Wyoming front ends share.

Every job runs on the single worker thread, so the recogniser and the VAD (neither of them
thread-safe) are only ever touched there, and a 2-core box is never oversubscribed. A full
queue is refused at once (`QueueFull`), never waited on.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.errors import BadInputError, VoxtrayError
from voxtray.inference.cpu import cpu_model
from voxtray.inference.recognizers.base import Recognizer, with_vocabulary
from voxtray.inference.vad import SileroVad, SpeechSegment, VadOptions, VadSegmenter

T = TypeVar("T")


class QueueFull(VoxtrayError):
    """Every queue slot is taken; the caller should retry after `retry_after_s`."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"server busy; retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class AudioTooLong(BadInputError):
    """The audio is longer than the server accepts."""


@dataclass(frozen=True)
class ServiceInfo:
    """Where requests run, as every response reports it."""

    model: str
    engine: str
    provider: str
    device: str
    precision: str
    languages: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Segment:
    start_s: float
    end_s: float
    text: str
    tokens: list[int]
    no_speech_prob: float | None


@dataclass
class TranscriptionResult:
    """One request's text, segments and timings (milliseconds)."""

    text: str
    duration_s: float
    segments: list[Segment] = field(default_factory=list)
    decode_ms: float = 0.0
    inference_ms: float = 0.0
    vad_ms: float = 0.0
    queue_ms: float = 0.0
    provider: str = ""


@dataclass
class _Job(Generic[T]):
    run: Callable[[], T]
    future: Future[T]
    queued_at: float


def device_name(provider: str) -> str:
    """The CPU model or GPU name behind `provider`."""
    if provider not in ("cpu", ""):
        from voxtray.gpu.nvml import gpu_memory

        memory = gpu_memory(0)
        if memory is not None:
            return memory.name
    return cpu_model() or "cpu"


_UNKNOWN_FRAMES = 2**62  # libsndfile's count for a stream of unknown length is near 2**63


def _declared_seconds(path: Path) -> float | None:
    """The duration the file's header states, None where it states none."""
    import soundfile  # type: ignore[import-untyped, unused-ignore]

    try:
        info = soundfile.info(str(path))
        frames, rate = int(info.frames), int(info.samplerate)
    except Exception:  # load_audio gives the one-line reason
        return None
    if rate <= 0 or not 0 < frames < _UNKNOWN_FRAMES:
        return None
    return frames / rate


JOIN_GAP_S = 2.0
JOIN_SPAN_S = 25.0


def _joinable(first: SpeechSegment, then: SpeechSegment) -> bool:
    """Whether two VAD segments of one upload are recognised as one: a short pause and
    together within Whisper's window. One call instead of two costs less (each call has
    its own encoder run and prompt) and gives the decoder the sentence as context."""
    gap = then.start - first.end
    return gap <= JOIN_GAP_S * SAMPLE_RATE and then.end - first.start <= JOIN_SPAN_S * SAMPLE_RATE


class InferenceService:
    """Runs jobs one at a time on a worker thread, with at most `max_queue` waiting."""

    def __init__(
        self,
        recognizer: Recognizer,
        vad: SileroVad,
        info: ServiceInfo,
        *,
        max_queue: int = 8,
        max_audio_s: float = 600.0,
        max_sample_rate: int = 48000,
    ) -> None:
        self.recognizer = recognizer
        self.info = info
        self.max_queue = max_queue
        self.max_audio_s = max_audio_s
        self.max_sample_rate = max_sample_rate
        self._segmenter = VadSegmenter(vad, VadOptions())
        self._queue: queue.Queue[_Job[Any] | None] = queue.Queue(maxsize=max_queue)
        self._busy = False
        self._mean_job_s = 1.0
        self.completed = 0
        self._thread = threading.Thread(target=self._loop, name="voxtray-serve-worker", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        return self._queue.qsize()

    @property
    def busy(self) -> bool:
        return self._busy

    def submit(self, run: Callable[[], T]) -> Future[T]:
        """Queue `run` for the worker; raises `QueueFull` instead of waiting for a slot."""
        future: Future[T] = Future()
        try:
            self._queue.put_nowait(_Job(run, future, time.perf_counter()))
        except queue.Full:
            raise QueueFull(self.retry_after_s()) from None
        return future

    def retry_after_s(self) -> int:
        """Seconds until a queue slot is likely free, from recent job times (1 to 60)."""
        return max(1, min(math.ceil(self._mean_job_s * (self.waiting + 1)), 60))

    def close(self) -> None:
        """Stop the worker after the jobs already queued."""
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while (job := self._queue.get()) is not None:
            if not job.future.set_running_or_notify_cancel():
                continue  # the client gave up while it waited
            self._busy = True
            started = time.perf_counter()
            try:
                value = job.run()
                if isinstance(value, TranscriptionResult):
                    value.queue_ms = 1000 * (started - job.queued_at)
            except BaseException as exc:  # handed to whoever waits on the future
                job.future.set_exception(exc)
            else:
                job.future.set_result(value)
            finally:
                self._busy = False
                elapsed = time.perf_counter() - started
                self._mean_job_s = 0.8 * self._mean_job_s + 0.2 * elapsed
                self.completed += 1

    # --- the transcription job (worker thread only) ---

    def decode(self, path: Path, shown_name: str) -> NDArray[np.float32]:
        """Decode an uploaded file, refusing audio longer than `max_audio_s` or sampled
        above `max_sample_rate` before the samples are decoded."""
        from voxtray.audio.decode import AudioTooLongError, DecodeLimits, load_audio

        declared = _declared_seconds(path)
        if declared is not None and declared > self.max_audio_s * 1.5:
            raise AudioTooLong(self._too_long(declared))
        limits = DecodeLimits(max_seconds=self.max_audio_s, max_rate=self.max_sample_rate)
        try:
            audio = load_audio(path, limits=limits)
        except AudioTooLongError:
            limit = self.max_audio_s
            raise AudioTooLong(f"audio is longer than this server's {limit:.0f} s") from None
        except VoxtrayError as exc:
            raise BadInputError(str(exc).replace(str(path), shown_name)) from None
        if audio.size / SAMPLE_RATE > self.max_audio_s:
            raise AudioTooLong(self._too_long(audio.size / SAMPLE_RATE))
        return audio

    def _too_long(self, seconds: float) -> str:
        limit = self.max_audio_s
        return f"audio is {seconds:.0f} s long; this server accepts at most {limit:.0f} s"

    def transcribe(
        self,
        audio: NDArray[np.float32],
        on_segment: Callable[[str], None] | None = None,
        vocabulary: tuple[str, ...] = (),
    ) -> TranscriptionResult:
        """VAD segments of `audio`, each recognised in turn; `on_segment` hears each text.
        A `vocabulary` replaces the served one for this call (engines that can)."""
        if audio.size / SAMPLE_RATE > self.max_audio_s:
            raise AudioTooLong(self._too_long(audio.size / SAMPLE_RATE))
        recognizer = with_vocabulary(self.recognizer, vocabulary) if vocabulary else None
        segmenter = self._segmenter
        segmenter.reset()
        result = TranscriptionResult(text="", duration_s=round(audio.size / SAMPLE_RATE, 3))
        step = SAMPLE_RATE  # segments are recognised as the VAD closes them
        pending: SpeechSegment | None = None
        for start in range(0, audio.size + step, step):
            chunk = audio[start : start + step]
            pieces = segmenter.feed(chunk) if chunk.size else segmenter.flush()
            for piece in pieces:
                if pending is not None and _joinable(pending, piece):
                    pending = SpeechSegment(
                        pending.start, piece.end, audio[pending.start : piece.end], piece.split
                    )
                    continue
                if pending is not None:
                    self._recognize(pending, result, on_segment, recognizer)
                pending = piece
        if pending is not None:
            self._recognize(pending, result, on_segment, recognizer)
        result.vad_ms = 1000 * segmenter.vad_seconds
        result.provider = result.provider or self.recognizer.provider
        result.text = " ".join(s.text for s in result.segments)
        return result

    def _recognize(
        self,
        piece: SpeechSegment,
        result: TranscriptionResult,
        on_segment: Callable[[str], None] | None,
        recognizer: Recognizer | None = None,
    ) -> None:
        began = time.perf_counter()
        transcript = (recognizer or self.recognizer).transcribe(piece.audio)
        result.inference_ms += 1000 * (time.perf_counter() - began)
        result.provider = transcript.provider
        if not transcript.text:
            return
        result.segments.append(
            Segment(
                start_s=round(piece.start / SAMPLE_RATE, 3),
                end_s=round(piece.end / SAMPLE_RATE, 3),
                text=transcript.text,
                tokens=list(transcript.tokens),
                no_speech_prob=transcript.no_speech_prob,
            )
        )
        if on_segment is not None:
            on_segment(transcript.text)

    def transcribe_file(
        self,
        path: Path,
        shown_name: str,
        on_segment: Callable[[str], None] | None = None,
        on_decoded: Callable[[], None] | None = None,
        vocabulary: tuple[str, ...] = (),
    ) -> TranscriptionResult:
        began = time.perf_counter()
        audio = self.decode(path, shown_name)
        decode_ms = 1000 * (time.perf_counter() - began)
        if on_decoded is not None:
            on_decoded()
        result = self.transcribe(audio, on_segment, vocabulary)
        result.decode_ms = decode_ms
        return result
