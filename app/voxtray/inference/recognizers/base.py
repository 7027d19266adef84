"""What every speech recogniser engine offers, whatever runs underneath."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from voxtray.memory import release_free_memory


@dataclass(frozen=True)
class Transcript:
    """One recognised stretch of audio.

    Attributes:
        text: The recognised text, stripped; empty for silence or noise.
        tokens: Model token ids that produced `text` (special tokens excluded).
        timings_ms: Time per stage: "features", "encoder", "decoder" where the engine can
            tell them apart, otherwise "recognize".
        provider: The execution provider that really ran (e.g. "cpu", "cuda").
        no_speech_prob: Probability the audio holds no speech, where the model gives one.
        guards: Names of the quality guards that changed the result.
        words: Each word of the raw decoded text with the number of `tokens` up to its
            end, where the engine knows its tokens (Whisper on onnxruntime); a prefix of
            `tokens` cut at a word end can be passed back as `prefix`.
        language: The language the text is in (a Whisper code): detected, fixed by the
            setting, or the model's only one; None when unknown (silence under `auto`).
    """

    text: str
    tokens: list[int]
    timings_ms: dict[str, float]
    provider: str
    no_speech_prob: float | None = None
    guards: list[str] = field(default_factory=list)
    words: list[tuple[str, int]] = field(default_factory=list)
    language: str | None = None


class Interrupt:
    """A stop request for a decode in progress: engines check it between steps and may
    register a hook that aborts a long native call when it is set."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []

    def set(self) -> None:
        with self._lock:
            self._event.set()
            hooks = list(self._hooks)
        for hook in hooks:
            hook()

    def clear(self) -> None:
        with self._lock:
            self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    @contextmanager
    def hooked(self, hook: Callable[[], None]) -> Iterator[None]:
        """Call `hook` if the interrupt is set while the block runs (or already is)."""
        with self._lock:
            self._hooks.append(hook)
            already = self._event.is_set()
        if already:
            hook()
        try:
            yield
        finally:
            with self._lock:
                self._hooks.remove(hook)


class Recognizer(Protocol):
    """A speech-to-text engine over one installed model."""

    engine: str
    model: str

    @property
    def provider(self) -> str:
        """The execution provider that really runs the model."""
        ...

    def warmup(self) -> None:
        """Run once on silence so the first real utterance is not slow."""
        ...

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        """Recognise 16 kHz mono float32 audio (at most about 25 s)."""
        ...


@runtime_checkable
class PrefixRecognizer(Recognizer, Protocol):
    """A recogniser that can continue from a prefix and stop early (for live text)."""

    takes_prefix: bool

    def transcribe(
        self,
        audio: NDArray[np.float32],
        *,
        prefix: Sequence[int] = (),
        check_prefix: bool = False,
        interrupt: Interrupt | None = None,
    ) -> Transcript:
        """Recognise 16 kHz mono float32 audio (at most about 25 s).

        Args:
            audio: The samples.
            prefix: Tokens from an earlier transcript of this recogniser (cut at a word
                end) that the text must start with.
            check_prefix: Keep `prefix` only as far as the model would have chosen it
                itself, so the text is what decoding without it gives, only faster.
            interrupt: When set, the decode stops early and the result carries the
                guard "interrupted"; it is then not a transcript to keep.
        """
        ...


@runtime_checkable
class VocabularyRecognizer(Recognizer, Protocol):
    """A recogniser whose favoured words can change per call, on the same model."""

    def with_vocabulary(self, vocabulary: tuple[str, ...]) -> Recognizer:
        """This recogniser favouring ``vocabulary`` instead of its own."""
        ...


@runtime_checkable
class LanguageRecognizer(Recognizer, Protocol):
    """A recogniser whose language can change per call, on the same model."""

    def with_language(self, language: str) -> Recognizer:
        """This recogniser transcribing ``language`` (a code, or "auto" to detect it)
        instead of its own; itself where the model cannot."""
        ...


@runtime_checkable
class MemoryReleasing(Recognizer, Protocol):
    """A recogniser that holds some memory only while it decodes."""

    def release_idle_memory(self) -> bool:
        """Hand that memory back; True when there was some (the next run takes it again)."""
        ...


@runtime_checkable
class ExplainsFallback(Recognizer, Protocol):
    """A recogniser that can say why it runs on another provider than the one asked for."""

    fallback_cause: str | None


@runtime_checkable
class FallsBack(Recognizer, Protocol):
    """A recogniser that runs another engine when its own fails (the GPU one, the
    remote one), and says why it did."""

    @property
    def fallback(self) -> str | None:
        """Why it runs the other engine now; None while its own runs."""
        ...


@runtime_checkable
class NamesDevice(Recognizer, Protocol):
    """A recogniser that runs somewhere else and can name that machine's device."""

    @property
    def device(self) -> str:
        """The device that runs the model ("cuda", "cpu"), "" where it is not said."""
        ...


def fallback_of(recognizer: Recognizer) -> str | None:
    """Why `recognizer` runs another engine than its own, for those that can fall back."""
    return recognizer.fallback if isinstance(recognizer, FallsBack) else None


def device_of(recognizer: Recognizer) -> str:
    """The device `recognizer` runs on where it names one (a server's), else ""."""
    return recognizer.device if isinstance(recognizer, NamesDevice) else ""


def transcribe_with(
    recognizer: Recognizer,
    audio: NDArray[np.float32],
    *,
    prefix: Sequence[int] = (),
    check_prefix: bool = False,
    interrupt: Interrupt | None = None,
) -> Transcript:
    """`transcribe` with a prefix and an interrupt for engines that take them
    (`takes_prefix`); other engines get the audio alone."""
    if isinstance(recognizer, PrefixRecognizer) and recognizer.takes_prefix:
        return recognizer.transcribe(
            audio, prefix=prefix, check_prefix=check_prefix, interrupt=interrupt
        )
    return recognizer.transcribe(audio)


def with_vocabulary(recognizer: Recognizer, vocabulary: tuple[str, ...]) -> Recognizer:
    """`recognizer` favouring `vocabulary` instead of its own (a request's), on the same
    model, for engines that can change it per call (`with_vocabulary`); others as they
    are."""
    if isinstance(recognizer, VocabularyRecognizer):
        return recognizer.with_vocabulary(vocabulary)
    return recognizer


def with_language(recognizer: Recognizer, language: str) -> Recognizer:
    """`recognizer` transcribing ``language`` instead of its own, for engines that can
    change it per call (`with_language`); others as they are."""
    if isinstance(recognizer, LanguageRecognizer):
        return recognizer.with_language(language)
    return recognizer


def release_idle_memory(recognizer: Recognizer) -> bool:
    """Between utterances: let the recogniser hand back memory it holds only while it
    decodes (engines that can), and return the C heap's free pages. True when the
    recogniser gave memory back, which its next run takes again."""
    if isinstance(recognizer, MemoryReleasing):
        return recognizer.release_idle_memory()
    release_free_memory()
    return False


INTERRUPTED = "interrupted"


def warmup_audio() -> NDArray[np.float32]:
    """Half a second of quiet noise: loud enough to pass the silence gate, so the model
    really runs, and never mistaken for words."""
    rng = np.random.default_rng(0)
    return (rng.standard_normal(8000) * 0.01).astype(np.float32)
