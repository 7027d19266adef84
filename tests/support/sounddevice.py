"""A stand-in for the sounddevice module that replays real audio in real time, with the
statuses and errors PortAudio reports; it is an `AudioBackend`, as the real module is."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import overload

import numpy as np
from numpy.typing import NDArray

from voxtray.audio.backend import DeviceInfo, DeviceKind, HostApiInfo, InputCallback

RATE = 16000


PLAYED_KEPT = 64


class FakePortAudioError(Exception):
    pass


class FakeStatus:
    """Stands in for sounddevice.CallbackFlags: falsy when no flag is set."""

    def __init__(self, text: str = "") -> None:
        self.text = text

    def __bool__(self) -> bool:
        return bool(self.text)

    def __str__(self) -> str:
        return self.text


class FakeSoundDevice:
    """The sounddevice API Voxtray uses, with a clip as the microphone and output streams
    that record what they play (``played``: the last `PLAYED_KEPT` writes, so hundreds of
    dictations with their cues do not grow the test's memory).

    ``fail`` makes the stream fail once it reaches sample ``fail_at``: "finish" calls the
    finished callback (what PortAudio does when the PulseAudio server dies), "raise" stops
    calling back and raises PortAudioError from ``active`` and ``stop()`` (a wedged device),
    "status" flags an input overflow on the block holding that sample and carries on.
    """

    PortAudioError = FakePortAudioError

    def __init__(
        self,
        audio: NDArray[np.float32],
        *,
        rate: int = RATE,
        speed: float = 4.0,
        supported_rates: tuple[int, ...] | None = None,
    ) -> None:
        self.audio = audio
        self.rate = rate
        self.speed = speed
        self.supported_rates = supported_rates or (rate,)
        self.fail: str | None = None
        self.fail_at = 0
        self.open_error: Exception | None = None
        self.default_input = 0
        self.streams: list[FakeStream] = []
        self.played: deque[NDArray[np.float32]] = deque(maxlen=PLAYED_KEPT)
        self.devices: list[DeviceInfo] = [
            self._device(0, "Fake Microphone", inputs=1),
            self._device(1, "Fake Speakers", inputs=0),
            self._device(2, "Fake USB Headset", inputs=1),
        ]

    def _device(self, index: int, name: str, inputs: int) -> DeviceInfo:
        return DeviceInfo(
            name=name,
            index=index,
            hostapi=0,
            max_input_channels=inputs,
            default_samplerate=float(self.rate),
        )

    @overload
    def query_devices(self) -> list[DeviceInfo]: ...
    @overload
    def query_devices(self, device: int | str | None = None, *, kind: DeviceKind) -> DeviceInfo: ...

    def query_devices(
        self, device: int | str | None = None, *, kind: DeviceKind | None = None
    ) -> list[DeviceInfo] | DeviceInfo:
        if device is None and kind is None:
            return [info.copy() for info in self.devices]
        index = self._find(device, kind)
        info = self.devices[index]
        if kind == "input" and info["max_input_channels"] < 1:
            raise ValueError(f"Not an input device: {info['name']!r}")
        return info.copy()

    def _find(self, device: int | str | None, kind: str | None) -> int:
        """sounddevice's rules and its messages, multi-line one included."""
        if device is None:
            device = self.default_input
        if isinstance(device, int):
            if not 0 <= device < len(self.devices):
                raise FakePortAudioError(f"Error querying device {device}")
            return device
        matches = [
            info
            for info in self.devices
            if device.lower() in info["name"].lower()
            and (kind != "input" or info["max_input_channels"] > 0)
        ]
        if not matches:
            raise ValueError(f"No {kind} device matching {device!r}")
        if len(matches) > 1:
            listing = "\n".join(f"[{info['index']}] {info['name']}" for info in matches)
            raise ValueError(f"Multiple {kind} devices found for {device!r}:\n{listing}")
        return int(matches[0]["index"])

    def query_hostapis(self, index: int) -> HostApiInfo:
        return HostApiInfo(name="Fake API")

    def check_input_settings(
        self, *, device: int, channels: int, dtype: str, samplerate: float
    ) -> None:
        if samplerate not in self.supported_rates:
            raise FakePortAudioError("Invalid sample rate [PaErrorCode -9997]")

    def InputStream(
        self,
        *,
        samplerate: float,
        blocksize: int,
        device: int,
        channels: int,
        dtype: str,
        callback: InputCallback,
        finished_callback: Callable[[], None],
    ) -> FakeStream:
        if self.open_error is not None:
            raise self.open_error
        self._find(device, "input")
        stream = FakeStream(
            self,
            samplerate=samplerate,
            blocksize=blocksize,
            channels=channels,
            dtype=dtype,
            callback=callback,
            finished_callback=finished_callback,
        )
        self.streams.append(stream)
        return stream

    def OutputStream(
        self, *, samplerate: float, channels: int, dtype: str, device: int | str | None
    ) -> FakeOutputStream:
        assert (channels, dtype) == (1, "float32")
        return FakeOutputStream(self.played)


class FakeOutputStream:
    """Keeps what is written to it, mono, in the record it was given."""

    def __init__(self, played: deque[NDArray[np.float32]]) -> None:
        self.played = played

    def start(self) -> None:
        pass

    def write(self, data: NDArray[np.float32]) -> None:
        self.played.append(np.array(data[:, 0]))

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


class FakeStream:
    """Replays the fake's audio (then silence) through the callback from its own thread."""

    def __init__(
        self,
        fake: FakeSoundDevice,
        *,
        samplerate: float,
        blocksize: int,
        channels: int,
        dtype: str,
        callback: InputCallback,
        finished_callback: Callable[[], None],
    ) -> None:
        assert (channels, dtype, samplerate) == (1, "float32", fake.rate)
        self.fake = fake
        self.blocksize = blocksize
        self.callback = callback
        self.finished_callback = finished_callback
        self.position = 0  # samples handed to the callback so far
        self.callback_seconds: list[float] = []
        self.broken = False
        self.finished = False
        self._gate = threading.Event()
        self._gate.set()
        self._parked = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # sounddevice's stream API

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fake-portaudio", daemon=True)
        self._thread.start()

    @property
    def active(self) -> bool:
        if self.broken:
            raise FakePortAudioError("Device unavailable [PaErrorCode -9985]")
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        self._stopping.set()
        self._gate.set()
        if self._thread is not None:
            self._thread.join()
        if self.broken:
            raise FakePortAudioError("Device unavailable [PaErrorCode -9985]")
        if not self.finished:
            self.finished = True
            self.finished_callback()

    def close(self) -> None:
        if not self.finished and not self.broken:
            self.stop()

    # test controls

    def hold(self) -> int:
        """Stop after the current block; returns the position, every block before it sent."""
        self._gate.clear()
        assert self._parked.wait(5), "the fake stream did not park"
        return self.position

    def resume(self) -> None:
        self._gate.set()

    def wait_for(self, position: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while self.position < position:
            assert time.monotonic() < deadline, f"stream stuck at {self.position}"
            time.sleep(0.002)

    def _run(self) -> None:
        period = self.blocksize / self.fake.rate / self.fake.speed
        due = time.monotonic()
        while not self._stopping.is_set():
            if not self._gate.is_set():
                self._parked.set()
                self._gate.wait()
                self._parked.clear()
                due = time.monotonic()
                continue
            if self._fails_now():
                return
            self._send_block()
            due += period
            time.sleep(max(0.0, due - time.monotonic()))

    def _fails_now(self) -> bool:
        fake = self.fake
        if fake.fail not in ("finish", "raise") or self.position < fake.fail_at:
            return False
        if fake.fail == "finish":
            self.finished = True
            self.finished_callback()
        else:
            self.broken = True
        self._parked.set()  # hold() must not wait for a stream that will never send again
        return True

    def _send_block(self) -> None:
        start, end = self.position, self.position + self.blocksize
        block = np.zeros(self.blocksize, dtype=np.float32)
        piece = self.fake.audio[start:end]
        block[: piece.size] = piece
        overflow = self.fake.fail == "status" and start <= self.fake.fail_at < end
        began = time.perf_counter()
        status = FakeStatus("input overflow" if overflow else "")
        self.callback(block.reshape(-1, 1), self.blocksize, None, status)
        self.callback_seconds.append(time.perf_counter() - began)
        self.position = end
