"""Playing a recording (a history entry's kept audio, a test recording) to the end."""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE

log = logging.getLogger(__name__)


class Player(Protocol):
    def play(self, data: NDArray[np.float32], samplerate: int) -> object: ...
    def wait(self) -> object: ...
    def stop(self) -> object: ...


def default_player() -> Player:
    import sounddevice

    player: Player = sounddevice
    return player


def play_recording(samples: NDArray[np.float32], player: Player | None = None) -> str | None:
    """Play 16 kHz mono `samples` and wait for the end: blocking, so callers run it off
    their event loop. None, or why it could not play (never raised)."""
    try:
        sd = player if player is not None else default_player()
        sd.play(samples, SAMPLE_RATE)
        sd.wait()
    except Exception as exc:  # no PortAudio, no output device: said, never raised
        log.info("playback failed: %s", exc)
        return f"cannot play the audio: {exc}"
    return None
