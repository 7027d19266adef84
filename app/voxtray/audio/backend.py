"""The sound-device API Voxtray records and plays cues through: the part of the
``sounddevice`` module it uses, so that module and a stand-in (tests) are interchangeable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol, TypedDict, overload, runtime_checkable

import numpy as np
from numpy.typing import NDArray

DeviceKind = Literal["input", "output"]


class DeviceInfo(TypedDict):
    """A device as ``query_devices`` describes it: the keys Voxtray reads."""

    name: str
    index: int
    hostapi: int
    max_input_channels: int
    default_samplerate: float


class HostApiInfo(TypedDict):
    """A host API (ALSA, PulseAudio, WASAPI, ...) as ``query_hostapis`` describes it."""

    name: str


InputCallback = Callable[[NDArray[np.float32], int, object, object], None]
"""Called on PortAudio's thread with a frames x channels block, its frame count, timing
information and status flags that are truthy when audio was dropped."""


class CaptureStream(Protocol):
    """An input stream: delivers blocks to its callback between ``start()`` and ``stop()``."""

    @property
    def active(self) -> bool: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...


class PlaybackStream(Protocol):
    """An output stream that blocking ``write()`` calls fill."""

    def start(self) -> None: ...
    def write(self, data: NDArray[np.float32]) -> object: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class AudioBackend(Protocol):
    """What Voxtray calls on the ``sounddevice`` module."""

    @property
    def PortAudioError(self) -> type[Exception]: ...

    @overload
    def query_devices(self) -> Sequence[DeviceInfo]: ...
    @overload
    def query_devices(self, device: int | str | None = None, *, kind: DeviceKind) -> DeviceInfo: ...

    def query_hostapis(self, index: int) -> HostApiInfo: ...

    def check_input_settings(
        self, *, device: int, channels: int, dtype: str, samplerate: float
    ) -> None: ...

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
    ) -> CaptureStream: ...

    def OutputStream(
        self, *, samplerate: float, channels: int, dtype: str, device: int | str | None
    ) -> PlaybackStream: ...


@runtime_checkable
class Restartable(Protocol):
    """A backend whose PortAudio can be restarted, so it lists devices afresh."""

    def _terminate(self) -> None: ...
    def _initialize(self) -> None: ...
