"""Playing a recording (a history entry's kept audio) on its own thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
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


def play_in_background(
    samples: NDArray[np.float32],
    done: Callable[[str | None], None],
    player: Player | None = None,
) -> threading.Thread:
    """Play 16 kHz mono `samples`; `done` gets None, or why it could not play, on the
    playing thread when it ends."""

    def run() -> None:
        try:
            sd = player if player is not None else default_player()
            sd.play(samples, SAMPLE_RATE)
            sd.wait()
        except Exception as exc:  # no PortAudio, no output device: said, never raised
            log.info("playback failed: %s", exc)
            done(f"cannot play the audio: {exc}")
            return
        done(None)

    thread = threading.Thread(target=run, name="voxtray-playback", daemon=True)
    thread.start()
    return thread
