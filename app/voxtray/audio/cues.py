"""Short sound cues (dictation started, stopped, failed), generated in memory and played on
a background thread, so the caller never waits for the sound card.

A cue that cannot play (no output device, PortAudio missing) is logged once and dropped:
a missing beep must never stop dictation.
"""

from __future__ import annotations

import enum
import functools
import logging
import queue
import threading
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from voxtray.audio.backend import AudioBackend, PlaybackStream

CUE_RATE = 48000
"""Sample rate of the generated cues; every output device takes it."""
_FADE_S = 0.006
_MAX_PENDING = 3
_log = logging.getLogger(__name__)


class Cue(enum.StrEnum):
    START = "start"  # rising: listening
    STOP = "stop"  # falling: heard, now recognising
    ERROR = "error"  # low double buzz


# (frequency Hz, seconds) per note; 0 Hz is a rest.
_NOTES: dict[Cue, tuple[tuple[float, float], ...]] = {
    Cue.START: ((660.0, 0.06), (880.0, 0.08)),
    Cue.STOP: ((880.0, 0.06), (660.0, 0.08)),
    Cue.ERROR: ((220.0, 0.09), (0.0, 0.05), (220.0, 0.09)),
}


StreamOpener = Callable[[int, str | int | None], PlaybackStream]
"""Opens a mono float32 output stream at a rate on a device (None: the default)."""


@functools.lru_cache(maxsize=8)
def _tone_cached(cue: Cue, volume: float) -> NDArray[np.float32]:
    parts = [_note(hz, seconds, volume) for hz, seconds in _NOTES[cue]]
    samples = np.concatenate(parts).astype(np.float32)
    samples.flags.writeable = False
    return samples


def tone(cue: Cue, volume: float = 0.25) -> NDArray[np.float32]:
    """The cue's samples at CUE_RATE, mono float32, peak `volume` (read-only, cached)."""
    return _tone_cached(Cue(cue), round(min(max(volume, 0.0), 1.0), 3))


def _note(hz: float, seconds: float, volume: float) -> NDArray[np.float64]:
    n = int(seconds * CUE_RATE)
    if hz <= 0:
        return np.zeros(n)
    t = np.arange(n) / CUE_RATE
    wave = np.sin(2 * np.pi * hz * t) + 0.2 * np.sin(4 * np.pi * hz * t)
    fade = min(int(_FADE_S * CUE_RATE), n // 2)
    envelope = np.ones(n)
    ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, fade))  # no click at either end
    envelope[:fade] = ramp
    envelope[n - fade :] = ramp[::-1]
    result: NDArray[np.float64] = volume * wave / 1.2 * envelope
    return result


def _with_tail(samples: NDArray[np.float32]) -> NDArray[np.float32]:
    tail = np.zeros(CUE_RATE // 50, dtype=np.float32)
    return np.concatenate([samples, tail]).reshape(-1, 1)


def sounddevice_stream(rate: int, device: str | int | None) -> PlaybackStream:
    import sounddevice

    backend: AudioBackend = sounddevice
    return backend.OutputStream(samplerate=rate, channels=1, dtype="float32", device=device)


class CuePlayer:
    """Plays cues one after another on its own thread; `play` returns at once.

    Args:
        enabled: Off: `play` does nothing (the setting).
        volume: Peak amplitude, 0..1.
        device: Output device name or index; None for the system default.
        open_stream: How a stream is opened (sounddevice's by default; a fake in tests).
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        volume: float = 0.25,
        device: str | int | None = None,
        open_stream: StreamOpener = sounddevice_stream,
    ) -> None:
        self.enabled = enabled
        self.volume = volume
        self.device = device
        self.last_error: str | None = None
        self._open_stream = open_stream
        self._queue: queue.Queue[Cue | None] = queue.Queue(maxsize=_MAX_PENDING)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def play(self, cue: Cue) -> bool:
        """Queue `cue`; False when it is off or too many cues are already waiting."""
        if not self.enabled:
            return False
        self._ensure_thread()
        try:
            self._queue.put_nowait(cue)
        except queue.Full:
            return False
        return True

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until every queued cue has played (for tests and shutdown)."""
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        return done.wait(timeout)

    def close(self) -> None:
        """Stop the thread after the queued cues; later `play` calls start a new one."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout=5.0)

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="voxtray-cues", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            cue = self._queue.get()
            try:
                if cue is None:
                    return
                self._play_now(cue)
            finally:
                self._queue.task_done()

    def _play_now(self, cue: Cue) -> None:
        try:
            stream = self._open_stream(CUE_RATE, self.device)
            try:
                stream.start()
                # A little silence after the tone, so closing the stream cannot cut its end.
                stream.write(_with_tail(tone(cue, self.volume)))
                stream.stop()
            finally:
                stream.close()
            self.last_error = None
        except Exception as exc:  # PortAudioError, OSError, a missing library: never fatal
            message = f"{exc.__class__.__name__}: {exc}".splitlines()[0]
            if message != self.last_error:
                _log.warning("sound cue not played: %s", message)
            self.last_error = message
