"""Live text while speaking: the open segment re-decoded on a budget, its stable prefix
committed by local agreement.

Each refresh decodes the audio of the segment being spoken, with the words committed so
far forced as the decoder's prefix. Words that two consecutive hypotheses agree on
(LocalAgreement-2) are committed and never change again while the segment is spoken; the
rest is tentative. When the segment closes, its final decode is the model's own on the
whole segment (the pipeline's decode-ahead has usually done it before the release); only
when committed words were typed while speaking (`keep_committed`) does it start from the
committed tokens, so that it continues what is already in the window.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from voxtray.audio import SAMPLE_RATE
from voxtray.inference.recognizers.base import (
    INTERRUPTED,
    Interrupt,
    Recognizer,
    Transcript,
    transcribe_with,
)
from voxtray.inference.textguards import repeated_words
from voxtray.inference.vad import SileroVad, SpeechSegment, VadSegmenter

PartialCallback = Callable[[str, str], None]


@dataclass(frozen=True)
class LiveOptions:
    """When the open segment is re-decoded.

    Attributes:
        interval_s: Time between refreshes while speech goes on.
        first_after_s: Speech heard before the first refresh.
        max_share: Most of the worker's time refreshes may take: after a refresh that
            took `t`, the next one waits at least `t / max_share` from the last one's start.
        keep_committed: Committed words stay in the final text even where the final
            decode heard them otherwise: for text typed while speaking, which cannot be
            taken back. Otherwise the final decode's own text wins (it heard the whole
            segment) and only the live display changes.
    """

    # Asked a little under the 0.5 s the user should wait at most: a request goes out only
    # with the next chunk of audio and once the previous refresh is done.
    interval_s: float = 0.4
    first_after_s: float = 0.4
    max_share: float = 0.6
    keep_committed: bool = False

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.first_after_s < 0:
            raise ValueError("interval_s must be > 0 and first_after_s >= 0")
        if not 0.0 < self.max_share <= 1.0:
            raise ValueError(f"max_share must be in (0, 1], got {self.max_share}")


@dataclass(frozen=True)
class Partial:
    """What the listener has so far: `committed` never changes, only grows; `tentative`
    is the current guess for the words after it."""

    committed: str = ""
    tentative: str = ""


@dataclass
class LiveStats:
    """One utterance's refreshes, for benchmarks and status.

    Attributes:
        onset_at: perf_counter time the first speech frame was fed.
        emitted_at: perf_counter time of each partial with new words.
        refreshed_at: perf_counter time each refresh decode completed.
        decode_s: Worker time of each refresh decode, kept or not.
        skipped: Refreshes dropped because a finished segment was waiting.
        interrupted: Refreshes stopped early for a finished segment or the release.
        reconciled: Finished segments whose final decode disagreed with committed words.
        last_prefix: The last finished segment and the prefix its decode was given.
    """

    onset_at: float | None = None
    emitted_at: list[float] = field(default_factory=list)
    refreshed_at: list[float] = field(default_factory=list)
    decode_s: list[float] = field(default_factory=list)
    skipped: int = 0
    interrupted: int = 0
    reconciled: int = 0
    last_prefix: tuple[SpeechSegment, list[int]] | None = None


def agreed_words(first: list[str], second: list[str]) -> int:
    """Length of the common word prefix of two hypotheses."""
    count = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        count += 1
    return count


def unrepeated(names: list[str], held: int, agreed: int) -> int:
    """How many of the `agreed` words may be committed: not past a word that repeats
    what was just said. Committed words are never taken back, so a repeat waits for the
    segment's final decode, which hears the whole segment."""
    before = repeated_words(" ".join(names[:held]))
    for count in range(held + 1, agreed + 1):
        if repeated_words(" ".join(names[:count])) > before:
            return count - 1
    return agreed


class LocalAgreement:
    """LocalAgreement-2 over the segment being spoken."""

    def __init__(self) -> None:
        self.reset(-1)

    def reset(self, start: int, carried: list[str] | None = None) -> None:
        """A new open segment begins at stream sample `start`; `carried` words were
        committed before a split and belong to it, without tokens to force."""
        self.start = start
        self.committed: list[str] = list(carried or [])
        self.prefix: list[int] = []
        self.tentative: list[str] = []
        self._previous: list[str] = []

    def update(self, transcript: Transcript) -> bool:
        """Take a new hypothesis; True when committed words grew."""
        words = transcript.words or [(word, 0) for word in transcript.text.split()]
        names = [word for word, _ in words]
        held = len(self.committed)
        agreed = unrepeated(names, held, agreed_words(names, self._previous))
        self._previous = names
        grew = False
        if names[:held] == self.committed and agreed > held:
            self.committed = names[:agreed]
            self.prefix = list(transcript.tokens[: words[agreed - 1][1]])
            grew = True
        self.tentative = names[len(self.committed) :]
        return grew


def _letters(words: list[str]) -> str:
    return "".join(ch for word in words for ch in word.lower() if ch.isalnum())


def reconcile(committed: list[str], text: str) -> str:
    """The final text of a segment, kept consistent with words already committed: if the
    final decode does not start with them, they stay and the rest follows (after the
    final words that spell the same letters, else after as many words)."""
    words = text.split()
    if not committed or words[: len(committed)] == committed:
        return text
    target = _letters(committed)
    skip = len(committed)
    for count in range(1, len(words) + 1):
        spelled = _letters(words[:count])
        if spelled == target:
            skip = count
            break
        if len(spelled) > len(target):
            break
    return " ".join(committed + words[skip:])


@dataclass(frozen=True)
class PartialRequest:
    """A snapshot of the open segment for the worker to re-decode."""

    segment: SpeechSegment


class LiveText:
    """The live-text state of one pipeline: scheduling on the feeding thread, decoding and
    agreement on the worker thread."""

    def __init__(self, options: LiveOptions, on_partial: PartialCallback | None) -> None:
        self.options = options
        self.on_partial = on_partial
        self.interrupt = Interrupt()
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """A new utterance."""
        self.stats = LiveStats()
        self.agreement = LocalAgreement()
        self._finished: list[str] = []
        self._done_until = 0
        self._pending = False
        self._last_request = -1e9
        self._next_allowed = -1e9
        self._partial = Partial()

    @property
    def partial(self) -> Partial:
        with self._lock:
            return self._partial

    # --- the feeding thread -----------------------------------------------------------

    def maybe_request(self, segmenter: VadSegmenter) -> PartialRequest | None:
        """A snapshot of the open segment if a refresh is due, else None."""
        onset = segmenter.speech_onset
        if onset is None or not segmenter.speech_active:
            return None
        now = time.perf_counter()
        heard = segmenter.frames_seen * SileroVad.FRAME - onset
        if self.stats.onset_at is None:
            self.stats.onset_at = now - heard / SAMPLE_RATE
        if self._pending or heard < self.options.first_after_s * SAMPLE_RATE:
            return None
        if now - self._last_request < self.options.interval_s or now < self._next_allowed:
            return None
        segment = segmenter.open_segment()
        if segment is None:
            return None
        self._pending = True
        self._last_request = now
        return PartialRequest(segment)

    # --- the worker thread ------------------------------------------------------------

    def refresh(self, recognizer: Recognizer, request: PartialRequest, waiting: bool) -> None:
        """Re-decode the open segment unless a finished segment is `waiting` or the
        request is stale."""
        try:
            segment = request.segment
            if segment.start < self._done_until:
                return
            self.interrupt.clear()
            if waiting:
                self.stats.skipped += 1
                return
            if segment.start != self.agreement.start:
                self.agreement.reset(segment.start)
            began = time.perf_counter()
            transcript = transcribe_with(
                recognizer, segment.audio, prefix=self.agreement.prefix, interrupt=self.interrupt
            )
            cost = time.perf_counter() - began
            self.stats.decode_s.append(cost)
            self._next_allowed = began + cost / self.options.max_share
            if INTERRUPTED in transcript.guards:
                self.stats.interrupted += 1
                return
            self.stats.refreshed_at.append(time.perf_counter())
            self.agreement.update(transcript)
            self._publish()
        finally:
            self._pending = False

    def prefix_of(self, segment: SpeechSegment) -> list[int]:
        """Committed tokens to force on a decode of the whole `segment`."""
        if segment.split or segment.start != self.agreement.start:
            return []
        return list(self.agreement.prefix)

    def prefix_for(self, segment: SpeechSegment) -> list[int]:
        """`prefix_of` a finished segment, remembered in the stats."""
        prefix = self.prefix_of(segment)
        self.stats.last_prefix = (segment, prefix)
        return prefix

    def segment_done(self, segment: SpeechSegment, transcript: Transcript) -> Transcript:
        """Record a finished segment's text; returns it, reconciled with what was
        committed of it when `keep_committed` says so."""
        agreement = self.agreement
        own = agreement.start == segment.start
        committed = agreement.committed if own else []
        carried: list[str] = []
        if own and segment.split:
            # Committed words past the cut belong to the rest of the segment.
            spoken = transcript.text.split()
            carried, committed = committed[len(spoken) :], committed[: len(spoken)]
        text = reconcile(committed, transcript.text)
        if text != transcript.text:
            self.stats.reconciled += 1
            if not self.options.keep_committed:
                text = transcript.text
        if text:
            self._finished.append(text)
        self._done_until = segment.end
        agreement.reset(segment.end if segment.split else -1, carried)
        self._publish()
        return dataclasses.replace(transcript, text=text) if text != transcript.text else transcript

    def _publish(self) -> None:
        agreement = self.agreement
        committed = " ".join(self._finished + agreement.committed)
        partial = Partial(committed, " ".join(agreement.tentative))
        with self._lock:
            if partial == self._partial:
                return
            self._partial = partial
        self.stats.emitted_at.append(time.perf_counter())
        if self.on_partial is not None:
            self.on_partial(partial.committed, partial.tentative)
