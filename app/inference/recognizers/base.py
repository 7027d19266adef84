"""What every speech recogniser engine offers, whatever runs underneath."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray


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
        language: The language the text is in (a Whisper code): detected, fixed by the
            setting, or the model's only one; None when unknown (silence under `auto`).
    """

    text: str
    tokens: list[int]
    timings_ms: dict[str, float]
    provider: str
    no_speech_prob: float | None = None
    guards: list[str] = field(default_factory=list)
    language: str | None = None


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


def warmup_audio() -> NDArray[np.float32]:
    """Half a second of quiet noise: loud enough to pass the silence gate, so the model
    really runs, and never mistaken for words."""
    rng = np.random.default_rng(0)
    return (rng.standard_normal(8000) * 0.01).astype(np.float32)
