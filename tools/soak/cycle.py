"""One push-to-talk cycle of the soak run: speech (a clip, two clips or a crop), silence or
a tap, and how well the recogniser heard it."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tools.soak.rig import RATE, Clip, WorkerRig
from voxtray.scoring.normalizer import normalize_english
from voxtray.scoring.wer import word_errors

MIN_CROP_S = 0.6
SILENCE_SAMPLES = RATE  # a key held 1 s over silence
TAP_SAMPLES = RATE // 10  # a 0.1 s tap


@dataclass(frozen=True)
class Speech:
    """What one speech cycle says: a clip, two clips back to back, or a crop of a clip."""

    label: str  # a clip id, "pair" or "crop"
    audio: NDArray[np.float32]
    reference: str
    cropped: bool = False


@dataclass(frozen=True)
class Cycle:
    index: int
    kind: str  # "speech", "silence" or "tap"
    clip: str
    text: str
    history_id: int | None
    release_to_text_ms: float
    wall_s: float
    wer: float = 0.0
    precision: float = 1.0  # crops only: share of words the clip really says
    samples: int = 0  # speech fed to the microphone
    segments_ms: tuple[int, ...] = ()  # the VAD segments the recogniser got


def plan(index: int, clips: list[Clip]) -> tuple[str, Clip | None]:
    """Every 10th cycle is silence, every 10th + 5 a tap; the rest rotate the clips."""
    if index % 10 == 9:
        return "silence", None
    if index % 10 == 4:
        return "tap", None
    return "speech", clips[index % len(clips)]


def speech_for(index: int, clip: Clip, clips: list[Clip], rng: np.random.Generator) -> Speech:
    """Every other speech cycle a random crop of ``clip``; the others ``clip`` alone or,
    one time in three, followed by another clip after a short pause."""
    if index % 2:
        length = int(rng.integers(int(MIN_CROP_S * RATE), clip.audio.size + 1))
        start = int(rng.integers(0, clip.audio.size - length + 1))
        return Speech("crop", clip.audio[start : start + length], clip.reference, cropped=True)
    if index % 3 == 0:
        other = clips[int(rng.integers(0, len(clips)))]
        pause = np.zeros(int(rng.integers(RATE // 10, RATE // 2)), dtype=np.float32)
        audio = np.concatenate([clip.audio, pause, other.audio])
        return Speech("pair", audio, f"{clip.reference} {other.reference}")
    return Speech(clip.id, clip.audio, clip.reference)


def crop_precision(reference: str, text: str) -> float:
    """Share of the transcript's words that the clip says (1.0 for no words)."""
    said = set(normalize_english(reference).split())
    words = normalize_english(text).split()
    return sum(w in said for w in words) / len(words) if words else 1.0


def run_cycle(rig: WorkerRig, index: int, clips: list[Clip], rng: np.random.Generator) -> Cycle:
    kind, clip = plan(index, clips)
    speech = speech_for(index, clip, clips, rng) if clip is not None else None
    began = time.perf_counter()
    rig.press()
    if speech is not None:
        rig.stream.wait_for(rig.speak(speech.audio))
        rig.hear_silence(int(rng.integers(0, RATE * 3 // 10)))  # key up 0-300 ms later
    else:
        rig.hear_silence(TAP_SAMPLES if kind == "tap" else SILENCE_SAMPLES)
    utterance = rig.release()
    score = 0.0
    if speech is not None:
        score = (
            crop_precision(speech.reference, utterance.text)
            if speech.cropped
            else word_errors(speech.reference, utterance.text).rate
        )
    return Cycle(
        index=index,
        kind=kind,
        clip=speech.label if speech else "",
        text=utterance.text,
        history_id=utterance.history_id,
        release_to_text_ms=utterance.timings_ms["release_to_text"],
        wall_s=time.perf_counter() - began,
        wer=score if speech is None or not speech.cropped else 0.0,
        precision=score if speech is not None and speech.cropped else 1.0,
        samples=speech.audio.size if speech else 0,
        segments_ms=tuple(round(1000 * (s.end_s - s.start_s)) for s in utterance.record.segments),
    )
