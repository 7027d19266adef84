"""Push-to-talk capture: an always-open input stream with pre-roll, tail and device-loss handling.

The stream stays open between utterances so that a ring buffer always holds the last
``preroll_ms`` of audio: the first word, spoken while the key goes down, is handed over
with the utterance instead of being clipped. ``end()`` keeps capturing ``tail_ms`` more so
that a key released early does not cut the last word.

PortAudio calls the stream callback on its own thread; the callback only copies the block
into a queue. One delivery thread per microphone reads that queue and does everything else
(resampling, the ring buffer, the level meter, calling the sink), so a slow sink delays
delivery but never makes the device overflow. Commands from ``begin()`` and ``end()`` go
through the same queue, which orders them exactly between blocks: the pre-roll is the audio
captured before ``begin()`` and the tail is the audio captured after ``end()``.

A device that cannot do ``sample_rate`` is opened at its default rate and each block is
resampled on the delivery thread by a streaming wrapper around
:func:`voxtray.audio.decode.resample` that keeps enough context between blocks for the result to
match resampling the whole recording at once (it holds back 6 ms of audio at 48 kHz).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.audio.blocks import LEVEL_FLOOR_DB, Ring, StreamResampler, level_dbfs
from voxtray.audio.inputs import (
    MicrophoneError,
    import_sounddevice,
    one_line,
)

log = logging.getLogger(__name__)

Sink = Callable[[NDArray[np.float32]], None]
ErrorHandler = Callable[[str], None]
DoneHandler = Callable[[], None]

# How often the delivery thread wakes without audio to check for a stalled stream.
_WATCHDOG_POLL_S = 0.05


@dataclass
class _Block:
    generation: int
    samples: NDArray[np.float32]
    status: str


@dataclass
class _Finished:
    generation: int


@dataclass
class _Begin:
    generation: int
    sink: Sink
    on_error: ErrorHandler | None


@dataclass
class _End:
    on_done: DoneHandler | None
    tail_ms: int | None = None
    until: Callable[[], bool] | None = None


class _Stop:
    pass


_Message = _Block | _Finished | _Begin | _End | _Stop


@dataclass
class _Utterance:
    sink: Sink
    on_error: ErrorHandler | None
    ending: bool = False
    tail_left: int = 0
    until: Callable[[], bool] | None = None
    on_done: DoneHandler | None = None
    lost: bool = False
    sink_failed: bool = False
    reported: set[str] = field(default_factory=set)


class Microphone:
    """A push-to-talk microphone: ``open()`` once, then ``begin()``/``end()`` per utterance.

    Every callback (``sink``, ``on_error``, ``on_done``) runs on the microphone's delivery
    thread, one at a time and in order. After ``begin()`` the caller must call ``end()``
    exactly once, also when ``on_error`` reported a lost device; ``on_done`` then runs once.
    ``end()`` may be called from those callbacks; ``end_and_wait()`` may not.

    Attributes:
        device: The device asked for (index, name, or None for the default).
        sample_rate: Rate of the audio handed to the sink, in Hz.
        stream_rate: Rate the device was opened at; differs from ``sample_rate`` when the
            device cannot do it and blocks are resampled (0 before ``open()``).

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
        sd_module: Any = None,
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
        self._preroll = preroll_ms * sample_rate // 1000
        self._tail = tail_ms * sample_rate // 1000
        self._stall_s = stall_ms / 1000
        self._sd = sd_module
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Message] = queue.SimpleQueue()
        self._stream: Any = None
        self._thread: threading.Thread | None = None
        self._generation = 0
        self._active = False
        self._lost: str | None = None
        self._level = LEVEL_FLOOR_DB
        self._live = threading.Event()
        self._label = _device_label(device)
        self.stream_rate = 0

    # -- public API ----------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether the stream and the delivery thread are running."""
        return self._thread is not None

    @property
    def label(self) -> str:
        """The device as a user knows it, for messages."""
        return self._label

    @property
    def level(self) -> float:
        """RMS level of the last block in dBFS (see :func:`level_dbfs`)."""
        return self._level

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
        return self._live.wait(timeout)

    @property
    def lost(self) -> str | None:
        """Why the stream stopped on its own, or None while it works."""
        return self._lost

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
                target=self._deliver_loop, name="voxtray-microphone", daemon=True
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
            self._live.clear()
            self._level = LEVEL_FLOOR_DB
            self._queue.put(_Stop())
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
            if self._lost is not None or self._stream is None:
                self._reopen()
            self._active = True
            self._queue.put(_Begin(self._generation, sink, on_error))

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
            self._queue.put(_End(on_done, tail_ms, until))

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
        sd = self._sd if self._sd is not None else import_sounddevice()
        self._sd = sd
        info = self._query_device(sd)
        self._label = _device_label(self.device, info)
        rate = self._choose_rate(sd, info)
        # Set before the stream exists: its first callbacks may come before start() returns.
        self._generation += 1
        self.stream_rate, self._lost = rate, None
        self._live.clear()
        stream = self._create_stream(sd, info, rate)
        try:
            stream.start()
        except sd.PortAudioError as exc:
            _close_quietly(sd, stream)
            raise self._open_error(exc) from None
        self._stream = stream

    def _query_device(self, sd: Any) -> dict[str, Any]:
        try:
            return dict(sd.query_devices(self.device, kind="input"))
        except (sd.PortAudioError, ValueError) as exc:
            if self.device is None:
                raise MicrophoneError(
                    f"cannot open {self._label}: no input device is available ({one_line(exc)})"
                ) from None
            raise self._open_error(exc) from None

    def _choose_rate(self, sd: Any, info: dict[str, Any]) -> int:
        try:
            sd.check_input_settings(
                device=info["index"], channels=1, dtype="float32", samplerate=self.sample_rate
            )
        except (sd.PortAudioError, ValueError):
            # Typical of raw ALSA hw devices and some USB microphones: 44.1 or 48 kHz only.
            return round(float(info["default_samplerate"]))
        return self.sample_rate

    def _create_stream(self, sd: Any, info: dict[str, Any], rate: int) -> Any:
        generation = self._generation
        put = self._queue.put

        def callback(indata: Any, frames: int, time_info: Any, status: Any) -> None:
            # PortAudio's thread: copy and hand over, nothing that could block or raise.
            put(_Block(generation, indata[:, 0].copy(), str(status) if status else ""))

        def finished() -> None:
            put(_Finished(generation))

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
        return MicrophoneError(f"cannot open {self._label}: {one_line(exc)}")

    def _stop_stream(self) -> None:
        # A new generation first, so the finished callback that stop() triggers, and any
        # block still in flight, are dropped as stale instead of read as a lost device.
        self._generation += 1
        stream, self._stream = self._stream, None
        if stream is not None:
            _close_quietly(self._sd, stream)

    def _reopen(self) -> None:
        log.info("reopening %s (%s)", self._label, self._lost or "it failed to start")
        self._stop_stream()
        self._start_stream()

    # -- the delivery thread -------------------------------------------------------------

    def _deliver_loop(self) -> None:
        state = _Delivery(self)
        while True:
            try:
                message = self._queue.get(timeout=_WATCHDOG_POLL_S)
            except queue.Empty:
                state.check_stall()
                continue
            if isinstance(message, _Stop):
                state.stop()
                return
            state.handle(message)
            state.check_stall()


def _heard_enough(utterance: _Utterance) -> bool:
    if utterance.until is None:
        return False
    try:
        return utterance.until()
    except Exception:  # a broken predicate must not stall the tail
        log.exception("tail predicate failed")
        return True


class _Delivery:
    """State owned by the delivery thread: pre-roll ring, resampler, current utterance."""

    def __init__(self, mic: Microphone) -> None:
        self.mic = mic
        self.ring = Ring(mic._preroll)
        self.resampler: StreamResampler | None = None
        self.generation = -1
        self.utterance: _Utterance | None = None
        self.last_block = time.monotonic()

    def handle(self, message: _Message) -> None:
        if isinstance(message, _Block):
            self.on_block(message)
        elif isinstance(message, _Finished):
            if message.generation == self.mic._generation:
                self.device_lost("the audio stream stopped (device unplugged or server gone)")
        elif isinstance(message, _Begin):
            self.on_begin(message)
        elif isinstance(message, _End):
            self.on_end(message)

    def on_block(self, block: _Block) -> None:
        if block.generation != self.mic._generation:
            return  # from a stream that was stopped or replaced
        if block.generation != self.generation:
            self.new_stream(block.generation)
        self.last_block = time.monotonic()
        self.mic._live.set()
        self.mic._level = level_dbfs(block.samples)
        samples = self.resampler(block.samples) if self.resampler else block.samples
        utterance = self.utterance
        if utterance is None:
            self.ring.push(samples)
            return
        if utterance.lost:
            return  # a stream that stalled and came back: its audio is no longer contiguous
        if block.status:
            self.report(utterance, f"{self.mic.label}: {block.status} (audio was dropped)")
        self.deliver(utterance, samples)

    def new_stream(self, generation: int) -> None:
        self.generation = generation
        self.ring.clear()
        rate, target = self.mic.stream_rate, self.mic.sample_rate
        self.resampler = StreamResampler(rate, target) if rate != target else None

    def on_begin(self, begin: _Begin) -> None:
        if begin.generation != self.generation:
            self.new_stream(begin.generation)  # reopened: the ring holds audio from before
        self.utterance = _Utterance(begin.sink, begin.on_error)
        # The stall clock starts now: a stream that died while idle is caught within
        # stall_ms rather than judged by a block from long ago.
        self.last_block = max(self.last_block, time.monotonic() - _WATCHDOG_POLL_S)
        self.deliver(self.utterance, self.ring.take())

    def on_end(self, end: _End) -> None:
        utterance = self.utterance
        if utterance is None:  # close() already abandoned it
            _call_quietly(end.on_done)
            return
        utterance.ending, utterance.on_done, utterance.until = True, end.on_done, end.until
        utterance.tail_left = (
            self.mic._tail if end.tail_ms is None else end.tail_ms * self.mic.sample_rate // 1000
        )
        if utterance.tail_left == 0 or utterance.lost:
            self.finish()

    def deliver(self, utterance: _Utterance, samples: NDArray[np.float32]) -> None:
        if utterance.ending:
            samples = samples[: utterance.tail_left]
            utterance.tail_left -= samples.size
        if samples.size and not utterance.sink_failed:
            try:
                utterance.sink(samples)
            except Exception as exc:  # the sink's bug must not kill the delivery thread
                log.exception("audio sink failed")
                utterance.sink_failed = True
                self.report(utterance, f"audio sink failed: {one_line(exc)}")
        if utterance.ending and (utterance.tail_left <= 0 or _heard_enough(utterance)):
            self.finish()

    def finish(self) -> None:
        utterance, self.utterance = self.utterance, None
        # Audio that arrived during the utterance was delivered; the pre-roll of the next
        # one must not repeat it.
        self.ring.clear()
        if utterance is not None:
            _call_quietly(utterance.on_done)

    def check_stall(self) -> None:
        utterance = self.utterance
        if utterance is None:
            self.check_idle_stall()
            return
        if utterance.lost:
            return
        if time.monotonic() - self.last_block < self.mic._stall_s:
            return
        reason = f"no audio for {self.mic._stall_s:g} s"
        try:
            stream = self.mic._stream
            if stream is not None and not stream.active:
                reason = "the audio stream stopped"
        except self.mic._sd.PortAudioError as exc:
            reason = one_line(exc)
        self.device_lost(reason)

    def check_idle_stall(self) -> None:
        # Between utterances a stream that went quiet (its server gone, the device pulled
        # without a finished callback) is marked lost, so the owner can see it and reopen.
        mic = self.mic
        if mic._lost is not None or not mic._live.is_set():
            return
        if time.monotonic() - self.last_block >= mic._stall_s:
            mic._lost = f"no audio for {mic._stall_s:g} s"
            mic._level = LEVEL_FLOOR_DB

    def device_lost(self, reason: str) -> None:
        self.mic._lost = reason
        self.mic._level = LEVEL_FLOOR_DB
        utterance = self.utterance
        if utterance is None or utterance.lost:
            return
        utterance.lost = True
        self.report(utterance, f"{self.mic.label} was lost: {reason}")
        if utterance.ending:
            self.finish()

    def stop(self) -> None:
        utterance = self.utterance
        if utterance is not None and utterance.ending:
            self.finish()
        self.utterance = None

    def report(self, utterance: _Utterance, message: str) -> None:
        if message in utterance.reported:
            return  # an overflow every block would flood the user
        utterance.reported.add(message)
        log.warning("%s", message)
        if utterance.on_error is not None:
            try:
                utterance.on_error(message)
            except Exception:
                log.exception("microphone error handler failed")


def reinitialise_portaudio(sd_module: Any = None) -> None:
    """Make PortAudio list devices again (it reads them once, when it starts), so a
    microphone plugged in or an audio server restarted since can be opened. Call it only
    while this process has no stream open."""
    sd = sd_module if sd_module is not None else import_sounddevice()
    terminate, initialize = getattr(sd, "_terminate", None), getattr(sd, "_initialize", None)
    if terminate is None or initialize is None:
        return
    try:
        terminate()
        initialize()
    except Exception as exc:  # PortAudio's own failure: the next open reports it
        log.debug("reinitialising PortAudio: %s", exc)


def _call_quietly(handler: DoneHandler | None) -> None:
    if handler is None:
        return
    try:
        handler()
    except Exception:
        log.exception("microphone done handler failed")


def _close_quietly(sd: Any, stream: Any) -> None:
    """Stop and close a stream whose device may already be gone."""
    for method in (stream.stop, stream.close):
        try:
            method()
        except sd.PortAudioError as exc:
            log.debug("closing the audio stream: %s", exc)


def _device_label(device: int | str | None, info: dict[str, Any] | None = None) -> str:
    if device is None:
        name = f" ({info['name']})" if info else ""
        return f"the default microphone{name}"
    if isinstance(device, int):
        name = f" ({info['name']})" if info else ""
        return f"microphone #{device}{name}"
    # A name is matched by substring: say which device it picked when that differs.
    name = f" ({info['name']})" if info and info["name"] != device else ""
    return f"microphone {device!r}{name}"
