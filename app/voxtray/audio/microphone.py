"""Push-to-talk capture: an always-open input stream with pre-roll, tail and device-loss handling.

The stream stays open between utterances so that a ring buffer always holds the last
``preroll_ms`` of audio: the first word, spoken while the key goes down, is handed over
with the utterance instead of being clipped. ``end()`` keeps capturing ``tail_ms`` more so
that a key released early does not cut the last word.

PortAudio calls the stream callback on its own thread; the callback only copies the block
into a queue. One delivery thread per microphone (see :mod:`voxtray.audio.delivery`) reads
that queue and does everything else (resampling, the ring buffer, the level meter, calling
the sink), so a slow sink delays delivery but never makes the device overflow. Commands
from ``begin()`` and ``end()`` go through the same queue, which orders them exactly between
blocks: the pre-roll is the audio captured before ``begin()`` and the tail is the audio
captured after ``end()``.

A device that cannot do ``sample_rate`` is opened at its default rate and each block is
resampled on the delivery thread by a streaming wrapper around
:func:`voxtray.audio.decode.resample` that keeps enough context between blocks for the result to
match resampling the whole recording at once (it holds back 6 ms of audio at 48 kHz).
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections.abc import Callable
from types import TracebackType

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.audio.backend import AudioBackend, CaptureStream, DeviceInfo
from voxtray.audio.blocks import LEVEL_FLOOR_DB
from voxtray.audio.delivery import (
    Begin,
    Block,
    CaptureState,
    DoneHandler,
    End,
    ErrorHandler,
    Finished,
    Message,
    Sink,
    Stop,
    deliver_loop,
)
from voxtray.audio.inputs import MicrophoneError, import_sounddevice, one_line

log = logging.getLogger(__name__)


class Microphone:
    """A push-to-talk microphone: ``open()`` once, then ``begin()``/``end()`` per utterance.

    Every callback (``sink``, ``on_error``, ``on_done``) runs on the microphone's delivery
    thread, one at a time and in order. After ``begin()`` the caller must call ``end()``
    exactly once, also when ``on_error`` reported a lost device; ``on_done`` then runs once.
    ``end()`` may be called from those callbacks; ``end_and_wait()`` may not.

    Attributes:
        device: The device asked for (index, name, or None for the default).
        sample_rate: Rate of the audio handed to the sink, in Hz.

    Example::

        with Microphone() as mic:
            mic.begin(pipeline.feed)
            ...  # key held
            mic.end_and_wait(2.0)
    """

    def __init__(
        self,
        device: int | str | None = None,
        *,
        sample_rate: int = SAMPLE_RATE,
        preroll_ms: int = 400,
        tail_ms: int = 400,
        block_ms: int = 20,
        stall_ms: int = 2000,
        sd_module: AudioBackend | None = None,
    ) -> None:
        """Configure a microphone; nothing is opened yet.

        Args:
            device: PortAudio index, name (substring match, as sounddevice does), or None
                for the system default input.
            sample_rate: Rate of the audio handed to the sink, in Hz.
            preroll_ms: Audio from before ``begin()`` handed over with each utterance.
            tail_ms: Audio captured after ``end()`` before the utterance finishes.
            block_ms: Size of the blocks PortAudio delivers.
            stall_ms: During an utterance, a stream silent this long counts as lost.
            sd_module: The ``sounddevice`` module (default) or a stand-in for tests.
        """
        if min(sample_rate, block_ms, stall_ms) <= 0 or min(preroll_ms, tail_ms) < 0:
            raise ValueError("sample_rate, block_ms and stall_ms must be positive")
        self.device = device
        self.sample_rate = sample_rate
        self.block_ms = block_ms
        self._state = CaptureState(
            sample_rate=sample_rate,
            preroll=preroll_ms * sample_rate // 1000,
            tail=tail_ms * sample_rate // 1000,
            stall_s=stall_ms / 1000,
            label=_device_label(device),
            backend=sd_module,
        )
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._active = False

    # -- public API ----------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether the stream and the delivery thread are running."""
        return self._thread is not None

    @property
    def label(self) -> str:
        """The device as a user knows it, for messages."""
        return self._state.label

    @property
    def level(self) -> float:
        """RMS level of the last block in dBFS (see :func:`voxtray.audio.blocks.level_dbfs`)."""
        return self._state.level

    @property
    def stream_rate(self) -> int:
        """Rate the device was opened at; differs from ``sample_rate`` when the device
        cannot do it and blocks are resampled (0 before ``open()``)."""
        return self._state.stream_rate

    def wait_for_audio(self, timeout: float | None = None) -> bool:
        """Wait for the first block from the device since it was (re)opened.

        Some setups start delivering late: through PulseAudio's ALSA plugin the first
        stream of a process took up to 1.9 s, and whatever was said before is lost. The
        stream stays open between utterances, so this only matters right after opening.

        Args:
            timeout: Seconds to wait at most; None waits as long as it takes.

        Returns:
            True once audio flows, False on timeout.
        """
        return self._state.live.wait(timeout)

    @property
    def lost(self) -> str | None:
        """Why the stream stopped on its own, or None while it works."""
        return self._state.lost

    def open(self) -> None:
        """Open the device and start filling the pre-roll; does nothing if already open.

        Raises:
            MicrophoneError: The device is missing, busy or cannot record mono float32.
        """
        with self._lock:
            if self._thread is not None:
                return
            self._start_stream()
            self._thread = threading.Thread(
                target=functools.partial(deliver_loop, self._queue, self._state),
                name="voxtray-microphone",
                daemon=True,
            )
            self._thread.start()

    def close(self) -> None:
        """Stop the stream and join the delivery thread.

        An utterance in progress ends at once; ``on_done`` runs if ``end()`` was called.
        """
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            self._stop_stream()
            self._active = False
            self._state.live.clear()
            self._state.level = LEVEL_FLOOR_DB
            self._queue.put(Stop())
        if thread is not threading.current_thread():  # close() from a callback: it ends soon
            thread.join()

    def begin(self, sink: Sink, on_error: ErrorHandler | None = None) -> None:
        """Start an utterance: hand the pre-roll to ``sink``, then every new block.

        A stream that was lost since the last utterance is reopened first.

        Args:
            sink: Receives mono float32 blocks at ``sample_rate``, on the delivery thread.
            on_error: Receives a one-line message when audio is dropped or the device is
                lost; after a loss no more audio arrives and ``end()`` finishes at once.

        Raises:
            MicrophoneError: A lost stream could not be reopened.
            RuntimeError: The microphone is closed or an utterance is in progress.
        """
        with self._lock:
            if self._thread is None:
                raise RuntimeError("begin() on a closed microphone")
            if self._active:
                raise RuntimeError("an utterance is already in progress")
            if self._state.lost is not None or self._state.stream is None:
                self._reopen()
            self._active = True
            self._queue.put(Begin(self._state.generation, sink, on_error))

    def end(
        self,
        on_done: DoneHandler | None = None,
        *,
        tail_ms: int | None = None,
        until: Callable[[], bool] | None = None,
    ) -> None:
        """Finish the utterance after ``tail_ms`` more audio, then call ``on_done``.

        Args:
            on_done: Called on the delivery thread after the sink's last block.
            tail_ms: This utterance's tail, instead of the one set at construction
                (0 when the caller knows the speaker had already stopped).
            until: Asked on the delivery thread after each tail block reaches the sink;
                True ends the tail there (the sink heard what it was waiting for).

        Raises:
            RuntimeError: No utterance is in progress.
        """
        with self._lock:
            if not self._active:
                raise RuntimeError("end() without begin()")
            self._active = False
            self._queue.put(End(on_done, tail_ms, until))

    def end_and_wait(
        self,
        timeout: float | None = None,
        *,
        tail_ms: int | None = None,
        until: Callable[[], bool] | None = None,
    ) -> bool:
        """``end()``, then wait until the tail has been delivered.

        Args:
            timeout: Seconds to wait at most; None waits as long as it takes.
            tail_ms: As for ``end()``.
            until: As for ``end()``.

        Returns:
            True when the utterance finished within the timeout.

        Raises:
            RuntimeError: Called from a callback, where it would wait for itself.
        """
        if threading.current_thread() is self._thread:
            raise RuntimeError("end_and_wait() from a microphone callback; use end()")
        done = threading.Event()
        self.end(done.set, tail_ms=tail_ms, until=until)
        return done.wait(timeout)

    def __enter__(self) -> Microphone:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- the stream (caller's thread, under the lock) ------------------------------------

    def _start_stream(self) -> None:
        state = self._state
        sd = state.backend if state.backend is not None else import_sounddevice()
        state.backend = sd
        info = self._query_device(sd)
        state.label = _device_label(self.device, info)
        rate = self._choose_rate(sd, info)
        # Set before the stream exists: its first callbacks may come before start() returns.
        state.generation += 1
        state.stream_rate, state.lost = rate, None
        state.live.clear()
        stream = self._create_stream(sd, info, rate)
        try:
            stream.start()
        except sd.PortAudioError as exc:
            _close_quietly(sd, stream)
            raise self._open_error(exc) from None
        state.stream = stream

    def _query_device(self, sd: AudioBackend) -> DeviceInfo:
        try:
            return sd.query_devices(self.device, kind="input")
        except (sd.PortAudioError, ValueError) as exc:
            if self.device is None:
                raise MicrophoneError(
                    f"cannot open {self.label}: no input device is available ({one_line(exc)})"
                ) from None
            raise self._open_error(exc) from None

    def _choose_rate(self, sd: AudioBackend, info: DeviceInfo) -> int:
        try:
            sd.check_input_settings(
                device=info["index"], channels=1, dtype="float32", samplerate=self.sample_rate
            )
        except (sd.PortAudioError, ValueError):
            # Typical of raw ALSA hw devices and some USB microphones: 44.1 or 48 kHz only.
            return round(float(info["default_samplerate"]))
        return self.sample_rate

    def _create_stream(self, sd: AudioBackend, info: DeviceInfo, rate: int) -> CaptureStream:
        generation = self._state.generation
        put = self._queue.put

        def callback(
            indata: NDArray[np.float32], frames: int, time_info: object, status: object
        ) -> None:
            # PortAudio's thread: copy and hand over, nothing that could block or raise.
            put(Block(generation, indata[:, 0].copy(), str(status) if status else ""))

        def finished() -> None:
            put(Finished(generation))

        try:
            return sd.InputStream(
                samplerate=rate,
                blocksize=max(1, rate * self.block_ms // 1000),
                device=info["index"],
                channels=1,
                dtype="float32",
                callback=callback,
                finished_callback=finished,
            )
        except (sd.PortAudioError, ValueError) as exc:
            raise self._open_error(exc) from None

    def _open_error(self, exc: BaseException) -> MicrophoneError:
        return MicrophoneError(f"cannot open {self.label}: {one_line(exc)}")

    def _stop_stream(self) -> None:
        # A new generation first, so the finished callback that stop() triggers, and any
        # block still in flight, are dropped as stale instead of read as a lost device.
        state = self._state
        state.generation += 1
        stream, state.stream = state.stream, None
        if stream is not None and state.backend is not None:
            _close_quietly(state.backend, stream)

    def _reopen(self) -> None:
        log.info("reopening %s (%s)", self.label, self._state.lost or "it failed to start")
        self._stop_stream()
        self._start_stream()


def _close_quietly(sd: AudioBackend, stream: CaptureStream) -> None:
    """Stop and close a stream whose device may already be gone."""
    for method in (stream.stop, stream.close):
        try:
            method()
        except sd.PortAudioError as exc:
            log.debug("closing the audio stream: %s", exc)


def _device_label(device: int | str | None, info: DeviceInfo | None = None) -> str:
    if device is None:
        name = f" ({info['name']})" if info else ""
        return f"the default microphone{name}"
    if isinstance(device, int):
        name = f" ({info['name']})" if info else ""
        return f"microphone #{device}{name}"
    # A name is matched by substring: say which device it picked when that differs.
    name = f" ({info['name']})" if info and info["name"] != device else ""
    return f"microphone {device!r}{name}"
