"""A microphone's delivery thread: everything done with a block after PortAudio's callback
copied it into the queue (resampling, the pre-roll ring, the level meter, the sink), and
the watchdog that notices a stream gone quiet.

The microphone puts the stream's blocks and its own commands on one queue, which orders
them exactly between blocks; ``CaptureState`` is what both sides see of the stream.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from voxtray.audio.backend import AudioBackend, CaptureStream
from voxtray.audio.blocks import LEVEL_FLOOR_DB, Ring, StreamResampler, level_dbfs
from voxtray.audio.inputs import one_line

# The microphone's own log: what a user reads there does not depend on which module wrote it.
log = logging.getLogger("voxtray.audio.microphone")

Sink = Callable[[NDArray[np.float32]], None]
ErrorHandler = Callable[[str], None]
DoneHandler = Callable[[], None]

# How often the delivery thread wakes without audio to check for a stalled stream.
WATCHDOG_POLL_S = 0.05


@dataclass
class Block:
    generation: int
    samples: NDArray[np.float32]
    status: str


@dataclass
class Finished:
    generation: int


@dataclass
class Begin:
    generation: int
    sink: Sink
    on_error: ErrorHandler | None


@dataclass
class End:
    on_done: DoneHandler | None
    tail_ms: int | None = None
    until: Callable[[], bool] | None = None


class Stop:
    pass


Message = Block | Finished | Begin | End | Stop


@dataclass
class CaptureState:
    """A microphone's stream as its delivery thread sees it.

    The microphone sets the stream, its rate and generation under its lock; the delivery
    thread sets ``level``, ``lost`` and ``live`` as audio comes or stops. A new generation
    marks every block and callback of the streams before it as stale.
    """

    sample_rate: int
    preroll: int
    tail: int
    stall_s: float
    label: str
    backend: AudioBackend | None = None
    stream: CaptureStream | None = None
    stream_rate: int = 0
    generation: int = 0
    lost: str | None = None
    level: float = LEVEL_FLOOR_DB
    live: threading.Event = field(default_factory=threading.Event)


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


def deliver_loop(messages: queue.SimpleQueue[Message], state: CaptureState) -> None:
    """The delivery thread: handle messages until ``Stop``."""
    delivery = _Delivery(state)
    while True:
        try:
            message = messages.get(timeout=WATCHDOG_POLL_S)
        except queue.Empty:
            delivery.check_stall()
            continue
        if isinstance(message, Stop):
            delivery.stop()
            return
        delivery.handle(message)
        delivery.check_stall()


def call_quietly(handler: DoneHandler | None) -> None:
    if handler is None:
        return
    try:
        handler()
    except Exception:
        log.exception("microphone done handler failed")


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

    def __init__(self, state: CaptureState) -> None:
        self.state = state
        self.ring = Ring(state.preroll)
        self.resampler: StreamResampler | None = None
        self.generation = -1
        self.utterance: _Utterance | None = None
        self.last_block = time.monotonic()

    def handle(self, message: Message) -> None:
        if isinstance(message, Block):
            self.on_block(message)
        elif isinstance(message, Finished):
            if message.generation == self.state.generation:
                self.device_lost("the audio stream stopped (device unplugged or server gone)")
        elif isinstance(message, Begin):
            self.on_begin(message)
        elif isinstance(message, End):
            self.on_end(message)

    def on_block(self, block: Block) -> None:
        if block.generation != self.state.generation:
            return  # from a stream that was stopped or replaced
        if block.generation != self.generation:
            self.new_stream(block.generation)
        self.last_block = time.monotonic()
        self.state.live.set()
        self.state.level = level_dbfs(block.samples)
        samples = self.resampler(block.samples) if self.resampler else block.samples
        utterance = self.utterance
        if utterance is None:
            self.ring.push(samples)
            return
        if utterance.lost:
            return  # a stream that stalled and came back: its audio is no longer contiguous
        if block.status:
            self.report(utterance, f"{self.state.label}: {block.status} (audio was dropped)")
        self.deliver(utterance, samples)

    def new_stream(self, generation: int) -> None:
        self.generation = generation
        self.ring.clear()
        rate, target = self.state.stream_rate, self.state.sample_rate
        self.resampler = StreamResampler(rate, target) if rate != target else None

    def on_begin(self, begin: Begin) -> None:
        if begin.generation != self.generation:
            self.new_stream(begin.generation)  # reopened: the ring holds audio from before
        self.utterance = _Utterance(begin.sink, begin.on_error)
        # The stall clock starts now: a stream that died while idle is caught within
        # stall_ms rather than judged by a block from long ago.
        self.last_block = max(self.last_block, time.monotonic() - WATCHDOG_POLL_S)
        self.deliver(self.utterance, self.ring.take())

    def on_end(self, end: End) -> None:
        utterance = self.utterance
        if utterance is None:  # close() already abandoned it
            call_quietly(end.on_done)
            return
        utterance.ending, utterance.on_done, utterance.until = True, end.on_done, end.until
        utterance.tail_left = (
            self.state.tail if end.tail_ms is None else end.tail_ms * self.state.sample_rate // 1000
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
            call_quietly(utterance.on_done)

    def check_stall(self) -> None:
        utterance = self.utterance
        if utterance is None:
            self.check_idle_stall()
            return
        if utterance.lost:
            return
        state = self.state
        if time.monotonic() - self.last_block < state.stall_s:
            return
        reason = f"no audio for {state.stall_s:g} s"
        stream, backend = state.stream, state.backend
        if stream is not None and backend is not None:
            try:
                if not stream.active:
                    reason = "the audio stream stopped"
            except backend.PortAudioError as exc:
                reason = one_line(exc)
        self.device_lost(reason)

    def check_idle_stall(self) -> None:
        # Between utterances a stream that went quiet (its server gone, the device pulled
        # without a finished callback) is marked lost, so the owner can see it and reopen.
        state = self.state
        if state.lost is not None or not state.live.is_set():
            return
        if time.monotonic() - self.last_block >= state.stall_s:
            state.lost = f"no audio for {state.stall_s:g} s"
            state.level = LEVEL_FLOOR_DB

    def device_lost(self, reason: str) -> None:
        self.state.lost = reason
        self.state.level = LEVEL_FLOOR_DB
        utterance = self.utterance
        if utterance is None or utterance.lost:
            return
        utterance.lost = True
        self.report(utterance, f"{self.state.label} was lost: {reason}")
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
