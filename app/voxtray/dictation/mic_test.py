"""The set-up window's microphone check: a few seconds from the open microphone,
transcribed with the loaded pipeline; nothing is stored or typed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from voxtray.inference.pipeline import DictationPipeline
from voxtray.text.postprocess import TextOptions, process

if TYPE_CHECKING:
    from voxtray.audio.microphone import Microphone


def record_and_transcribe(
    microphone: Microphone, pipeline: DictationPipeline, seconds: float, options: TextOptions
) -> tuple[NDArray[np.float32], str]:
    """`seconds` of audio and the text made of it."""
    blocks: list[NDArray[np.float32]] = []
    microphone.begin(blocks.append)
    time.sleep(seconds)
    microphone.end_and_wait(seconds + 2.0, tail_ms=0)
    samples = np.concatenate(blocks) if blocks else np.zeros(0, np.float32)
    text = pipeline.transcribe([samples], decode_ahead=False).text if blocks else ""
    return samples.astype(np.float32), process(text, options).text
