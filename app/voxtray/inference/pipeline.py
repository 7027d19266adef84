"""The dictation pipeline: frames in, VAD segments, recognition while speech continues,
one record per utterance out.

The caller's thread runs the VAD (microseconds a frame); a worker thread transcribes each
finished segment while later audio is still arriving, so that when the speaker stops only
the last segment is left to recognise.

When the speaker pauses (``PAUSE_MS`` of silence inside a segment) the segment is decoded
ahead, as it would close if the pause lasted: a release or the VAD's own close then finds
its text ready, and speech that resumes cancels the guess.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.inference.live import LiveOptions, LiveText, Partial, PartialCallback, PartialRequest
from voxtray.inference.recognizers.base import (
    INTERRUPTED,
    Interrupt,
    Recognizer,
    Transcript,
    fallback_of,
    release_idle_memory,
    transcribe_with,
    warmup_audio,
    with_language,
    with_vocabulary,
)
from voxtray.inference.textguards import drop_leading_words, repeated_words, shared_edge
from voxtray.inference.vad import SileroVad, SpeechSegment, VadOptions, VadSegmenter
from voxtray.memory import release_free_memory
from voxtray.text.languages import main_language


@dataclass(frozen=True)
class SegmentRecord:
    start_s: float
    end_s: float
    text: str
    stt_ms: float
    timings_ms: dict[str, float]
    split: bool
    guards: list[str]
    language: str | None = None


@dataclass
class UtteranceRecord:
    """Everything one utterance produced, timings included.

    Attributes:
        text: The segment texts joined with spaces.
        audio_s: Audio received, in seconds.
        vad_ms: Time spent in the VAD model.
        stt_ms: Time spent recognising, summed over segments.
        release_to_text_ms: From the last frame's arrival to the final text.
        segments: Per-segment records, in order.
        language: The language of the most speech (segments with text), None if unknown.
        fallback: Why the recogniser did not run where it was asked to (a GPU that failed
            this session, a remote server that did not answer), one line; None if it did.
    """

    text: str = ""
    audio_s: float = 0.0
    vad_ms: float = 0.0
    stt_ms: float = 0.0
    release_to_text_ms: float = 0.0
    engine: str = ""
    model: str = ""
    provider: str = ""
    segments: list[SegmentRecord] = field(default_factory=list)
    language: str | None = None
    fallback: str | None = None

    def stage_totals_ms(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for segment in self.segments:
            for stage, ms in segment.timings_ms.items():
                totals[stage] = totals.get(stage, 0.0) + ms
        return totals

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TakeAsks:
    """What one utterance asks of the recogniser beyond its own settings (a mode's)."""

    vocabulary: tuple[str, ...] = ()
    """Words to favour instead of the recogniser's own; empty: its own."""
    language: str | None = None
    """A language code (or "auto") instead of the recogniser's own; None: its own."""


NOTHING_ASKED = TakeAsks()

log = logging.getLogger(__name__)

_DONE = None


class _Refill:
    """Run the recogniser once on the warm-up audio: its memory was handed back."""


_REFILL = _Refill()

JOIN_REPEAT = "join-repeat"
"""Guard: words repeated across two segments' border that the audio holds once."""
MAX_JOINED_S = 28.0
"""Two segments are decoded as one to judge a repeat at their border only up to this
length (Whisper's window is 30 s)."""
MAX_BORDER_WORDS = 2
"""Segments never share audio, so only a word cut at their border can be heard by both:
more words said again are speech said twice (decoded as one, Whisper may say it once)."""

PAUSE_MS = 128.0
"""Silence after speech that counts as a pause: the tail after a release stops waiting
for more words, and the segment is decoded ahead."""


@dataclass(frozen=True)
class _Guess:
    """A paused segment to decode ahead, cancelled through its interrupt."""

    segment: SpeechSegment
    interrupt: Interrupt = field(default_factory=Interrupt)


@dataclass(frozen=True)
class _Guessed:
    segment: SpeechSegment
    transcript: Transcript
    stt_ms: float


def same_speech(a: SpeechSegment, b: SpeechSegment) -> bool:
    """The two segments hold the same speech (they may differ in trailing silence)."""
    return a.speech_end is not None and (a.start, a.speech_end, a.split) == (
        b.start,
        b.speech_end,
        b.split,
    )


class DictationPipeline:
    """One utterance at a time: `start()`, `feed()` frames, `finish()` for the record.

    With `live` options, the segment being spoken is re-decoded while it goes on and
    `on_partial(committed, tentative)` is called on the worker thread (keep it quick)
    whenever the text so far changes; `partial` holds the latest.
    """

    def __init__(
        self,
        vad: SileroVad,
        recognizer: Recognizer,
        options: VadOptions | None = None,
        *,
        live: LiveOptions | None = None,
        on_partial: PartialCallback | None = None,
        decode_ahead: bool = True,
    ) -> None:
        self.recognizer = recognizer
        self.decode_ahead = decode_ahead
        self._ahead = decode_ahead
        self.segmenter = VadSegmenter(vad, options or VadOptions())
        self.live: LiveText | None = None
        self._worker: threading.Thread | None = None
        self.set_live(live, on_partial)
        self._queue: queue.Queue[SpeechSegment | PartialRequest | _Guess | _Refill | None] = (
            queue.Queue()
        )
        self._refill = False  # the next utterance starts by refilling the recogniser
        self._refill_stop = Interrupt()  # set as soon as real work is queued
        self._guess: _Guess | None = None  # feeding thread: the one queued and still valid
        self._guessed: _Guessed | None = None  # worker thread: its result
        self._results: list[tuple[SpeechSegment, Transcript, float]] = []
        self._samples = 0
        self._error: BaseException | None = None
        self._asks: Callable[[], TakeAsks] | None = None
        self._decoder: Recognizer | None = None  # worker thread: this utterance's recogniser
        self._last_asked: tuple[TakeAsks, Recognizer, Recognizer] | None = None

    def set_live(self, options: LiveOptions | None, on_partial: PartialCallback | None) -> None:
        """Turn live text on (options) or off (None) for the next utterances."""
        if self._worker is not None:
            raise RuntimeError("live text changes between utterances")
        self.live = LiveText(options, on_partial) if options is not None else None

    @property
    def partial(self) -> Partial:
        """Text so far in this utterance (empty without live text)."""
        return self.live.partial if self.live is not None else Partial()

    def start(
        self, *, decode_ahead: bool = True, asks: Callable[[], TakeAsks] | None = None
    ) -> None:
        """Begin an utterance; the previous one must be finished. `decode_ahead=False`
        (files, re-runs, recovery) leaves every segment to its close: nobody waits on a
        release there, and each segment gets the audio the VAD gives it. `asks`, called at
        the utterance's first decode, says what it wants beyond the recogniser's own
        settings (favoured words, a language), for engines that can change them per call."""
        if self._worker is not None:
            raise RuntimeError("an utterance is already in progress")
        self._ahead = decode_ahead and self.decode_ahead
        self.segmenter.reset()
        if self.live is not None:
            self.live.reset()
        self._results = []
        self._samples = 0
        self._error = None
        self._guess, self._guessed = None, None
        self._asks, self._decoder = asks, None
        self._worker = threading.Thread(
            target=self._recognize_loop, name="voxtray-stt", daemon=True
        )
        if self._refill:
            self._refill = False
            self._refill_stop = Interrupt()
            self._queue.put(_REFILL)
        self._worker.start()

    def feed(self, samples: NDArray[np.float32]) -> None:
        """Add 16 kHz mono frames; finished segments start recognising at once."""
        if self._worker is None:
            raise RuntimeError("feed() before start()")
        self._samples += samples.size
        segments = self.segmenter.feed(samples)
        for segment in segments:
            self._submit(segment)
        self._update_guess(segments)
        if self.live is not None:
            if segments:
                self.live.interrupt.set()
            request = self.live.maybe_request(self.segmenter)
            if request is not None:
                self._submit(request)

    def finish(self) -> UtteranceRecord:
        """The last frame has arrived: recognise what is left and return the record."""
        released = time.perf_counter()
        if self._worker is None:
            raise RuntimeError("finish() before start()")
        if self.live is not None:
            self.live.interrupt.set()
        segments = self.segmenter.flush()
        for segment in segments:
            self._submit(segment)
        self._update_guess(segments)
        self._submit(_DONE)
        self._worker.join()
        self._worker = None
        if self._error is not None:
            raise self._error
        record = self._record()
        record.release_to_text_ms = 1000 * (time.perf_counter() - released)
        return record

    def transcribe(
        self, chunks: Iterable[NDArray[np.float32]], *, decode_ahead: bool = True
    ) -> UtteranceRecord:
        """Run a whole utterance from an iterable of chunks (a file or a paced stream)."""
        self.start(decode_ahead=decode_ahead)
        try:
            for chunk in chunks:
                self.feed(chunk)
        except BaseException:
            self._abandon()
            raise
        record = self.finish()
        release_free_memory()  # what inference freed would stay in the C heap
        return record

    def release_idle_memory(self) -> None:
        """Between utterances: hand back what recognition holds only while it runs (see
        `recognizers.base.release_idle_memory`). The next utterance refills it with a
        warm-up run while the user speaks, so its own recognition does not pay for that;
        the refill stops as soon as there is speech to recognise."""
        self._refill = release_idle_memory(self.recognizer)

    def speaker_paused(self) -> bool:
        """The speaker has been quiet for ``PAUSE_MS`` (or no speech is open)."""
        return self.segmenter.quiet_ms >= PAUSE_MS

    def _update_guess(self, closed: list[SpeechSegment]) -> None:
        """Cancel a guess whose pause ended in more speech; queue one for a new pause."""
        guess = self._guess
        if guess is not None:
            if any(same_speech(guess.segment, segment) for segment in closed):
                self._guess = None  # closed as guessed: the worker will use it
                return
            if self.segmenter.paused_speech() == (guess.segment.start, guess.segment.speech_end):
                return  # still the same pause, or its trailing pad still coming
            guess.interrupt.set()
            self._guess = None
        if not self._ahead or self.segmenter.quiet_ms < PAUSE_MS:
            return
        ending = self.segmenter.ending_segment()
        if ending is not None:
            self._guess = _Guess(ending)
            self._submit(self._guess)

    def _abandon(self) -> None:
        if self._guess is not None:
            self._guess.interrupt.set()
        self._submit(_DONE)
        if self._worker is not None:
            self._worker.join()
        self._worker = None

    def _recognize_loop(self) -> None:
        while (item := self._queue.get()) is not _DONE:
            if self._error is not None:
                continue
            try:
                if isinstance(item, PartialRequest):
                    assert self.live is not None
                    self.live.refresh(self._decoding(), item, waiting=not self._queue.empty())
                elif isinstance(item, _Guess):
                    self._decode_ahead(item)
                elif isinstance(item, _Refill):
                    self._run_refill()
                else:
                    self._recognize(item)
            except BaseException as exc:  # handed to the caller in finish()
                self._error = exc

    def _submit(self, item: SpeechSegment | PartialRequest | _Guess | None) -> None:
        """Queue work for the recognition thread; a refill still waiting gives way."""
        self._refill_stop.set()
        self._queue.put(item)

    def _run_refill(self) -> None:
        if self._refill_stop.is_set():
            return
        try:
            transcribe_with(self.recognizer, warmup_audio(), interrupt=self._refill_stop)
        except Exception:  # only a warm-up: the utterance's own recognition will tell
            log.warning("refilling the recogniser failed", exc_info=True)

    def _decode_ahead(self, guess: _Guess) -> None:
        if guess.interrupt.is_set():
            return
        segment = guess.segment
        live = self.live
        prefix = live.prefix_of(segment) if live is not None and self._forces_prefix() else []
        started = time.perf_counter()
        transcript = transcribe_with(
            self._decoding(),
            segment.audio,
            prefix=prefix,
            check_prefix=bool(prefix),
            interrupt=guess.interrupt,
        )
        if INTERRUPTED in transcript.guards or guess.interrupt.is_set():
            return
        stt_ms = 1000 * (time.perf_counter() - started)
        self._guessed = _Guessed(segment, transcript, stt_ms)

    def _forces_prefix(self) -> bool:
        # Committed words are forced on the final decode only where they were typed while
        # speaking and must be kept: a prefix fed in one decoder step shifts the logits a
        # little, and a greedy close call can then go the other way.
        return self.live is not None and self.live.options.keep_committed

    def _take_guess(self, segment: SpeechSegment) -> _Guessed | None:
        # Words committed by live text since the guess was decoded need no new decode:
        # segment_done() reconciles the text with them.
        guessed, self._guessed = self._guessed, None
        if guessed is None or not same_speech(guessed.segment, segment):
            return None
        return guessed

    def _recognize(self, segment: SpeechSegment) -> None:
        started = time.perf_counter()
        committed = self.live.prefix_for(segment) if self.live is not None else []
        prefix = committed if self._forces_prefix() else []
        guessed = self._take_guess(segment)
        if guessed is not None:
            transcript, stt_ms = guessed.transcript, guessed.stt_ms
        else:
            transcript = transcribe_with(
                self._decoding(), segment.audio, prefix=prefix, check_prefix=bool(prefix)
            )
            stt_ms = 1000 * (time.perf_counter() - started)
        if self.live is not None:
            transcript = self.live.segment_done(segment, transcript)
        self._results.append((segment, self._check_join(segment, transcript), stt_ms))

    def _check_join(self, segment: SpeechSegment, transcript: Transcript) -> Transcript:
        """A word or two that end the previous segment's text and begin this one's again:
        the two segments decoded as one tell whether the speaker said them twice. Each
        segment alone may hear a word cut at their border."""
        if not self._results:
            return transcript
        before, said, _ = self._results[-1]
        shared = shared_edge(said.text, transcript.text)
        if not 0 < shared <= MAX_BORDER_WORDS:
            return transcript
        overlap = max(0, before.end - segment.start)
        audio = np.concatenate([before.audio, segment.audio[overlap:]])
        if audio.size > MAX_JOINED_S * SAMPLE_RATE:
            return transcript
        whole = transcribe_with(self._decoding(), audio)
        apart = f"{said.text} {transcript.text}"
        if repeated_words(whole.text) >= repeated_words(apart):
            return transcript
        text = drop_leading_words(transcript.text, shared)
        return replace(
            transcript, text=text, tokens=[], words=[], guards=[*transcript.guards, JOIN_REPEAT]
        )

    def _record(self) -> UtteranceRecord:
        segments = [
            SegmentRecord(
                start_s=round(segment.start / SAMPLE_RATE, 3),
                end_s=round(segment.end / SAMPLE_RATE, 3),
                text=transcript.text,
                stt_ms=stt_ms,
                timings_ms=transcript.timings_ms,
                split=segment.split,
                guards=transcript.guards,
                language=transcript.language,
            )
            for segment, transcript, stt_ms in self._results
        ]
        return UtteranceRecord(
            text=" ".join(s.text for s in segments if s.text),
            audio_s=self._samples / SAMPLE_RATE,
            vad_ms=1000 * self.segmenter.vad_seconds,
            stt_ms=sum(s.stt_ms for s in segments),
            engine=self.recognizer.engine,
            model=self.recognizer.model,
            provider=self.recognizer.provider,
            segments=segments,
            language=_utterance_language(segments),
            fallback=fallback_of(self._decoder or self.recognizer),
        )

    def _decoding(self) -> Recognizer:
        """This utterance's recogniser (on the worker thread): what it asks for is asked at
        the first decode, so a focus looked up while the user speaks can choose it."""
        if self._decoder is None:
            asks = self._asks() if self._asks is not None else NOTHING_ASKED
            if asks == NOTHING_ASKED:
                self._decoder = self.recognizer
            else:  # the last one is kept: a mode's words are encoded once, not every take
                last = self._last_asked
                if last is None or last[0] != asks or last[1] is not self.recognizer:
                    last = (asks, self.recognizer, _asked_of(self.recognizer, asks))
                    self._last_asked = last
                self._decoder = last[2]
        return self._decoder


def _asked_of(recognizer: Recognizer, asks: TakeAsks) -> Recognizer:
    if asks.vocabulary:
        recognizer = with_vocabulary(recognizer, asks.vocabulary)
    if asks.language is not None:
        recognizer = with_language(recognizer, asks.language)
    return recognizer


def _utterance_language(segments: list[SegmentRecord]) -> str | None:
    spoken = [s for s in segments if s.text] or segments
    return main_language([(s.language, s.end_s - s.start_s) for s in spoken])


def chunked(audio: NDArray[np.float32], chunk: int = 1600) -> Iterable[NDArray[np.float32]]:
    """Split audio into chunks as a microphone would deliver them (100 ms by default)."""
    for start in range(0, audio.size, chunk):
        yield audio[start : start + chunk]


def paced(
    chunks: Iterable[NDArray[np.float32]], speed: float = 1.0
) -> Iterable[NDArray[np.float32]]:
    """Deliver chunks no faster than real time divided by `speed`."""
    began = time.perf_counter()
    delivered = 0
    for chunk in chunks:
        delivered += chunk.size
        wait = began + delivered / SAMPLE_RATE / speed - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        yield chunk
