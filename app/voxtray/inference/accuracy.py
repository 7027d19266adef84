"""Does a recogniser give the right words on this machine? The shipped accuracy clip
(`resources/accuracy.wav`) decoded and scored against what it says.

Every Whisper model and precision of the catalog hears the clip without an error where
its arithmetic is sound, so a high word error rate means a model or precision broken
here: int8 weights that overflow on a CPU without VNNI, a GPU that returns garbage.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from voxtray.inference.recognizers.base import Recognizer
from voxtray.resources import resource_path
from voxtray.scoring.wer import word_errors

WRONG_TEXT_WER = 0.25
"""More than one word in four wrong on a clip every sound set-up gets right."""


@dataclass(frozen=True)
class ClipCheck:
    """What a recogniser heard in the accuracy clip."""

    text: str
    wer: float

    @property
    def wrong(self) -> bool:
        return self.wer > WRONG_TEXT_WER


@functools.cache
def accuracy_clip() -> tuple[NDArray[np.float32], str]:
    """The clip's samples and what it says."""
    from voxtray.audio.decode import load_audio

    reference = resource_path("accuracy.txt").read_text(encoding="utf-8").strip()
    return load_audio(resource_path("accuracy.wav")), reference


def check_clip(recognizer: Recognizer) -> ClipCheck:
    """Decode the accuracy clip and score the text against its reference."""
    audio, reference = accuracy_clip()
    text = recognizer.transcribe(audio).text
    return ClipCheck(text, round(word_errors(reference, text).rate, 4))
