"""The Wyoming protocol server (Home Assistant): describe -> info, and transcribe,
audio-start, audio-chunk..., audio-stop -> transcript, on the same inference worker as
the HTTP API. Wyoming has no authentication by design."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioChunkConverter, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import AsrModel, AsrProgram, Attribution, Describe, Info
from wyoming.server import AsyncEventHandler

from voxtray import __version__
from voxtray.audio import SAMPLE_RATE
from voxtray.errors import BadInputError
from voxtray.memory import release_free_memory
from voxtray.serve.formats import where_it_ran
from voxtray.serve.service import InferenceService, QueueFull, TranscriptionResult

_ATTRIBUTION = Attribution(name="Voxtray", url="https://github.com/voxtray/voxtray")
E = TypeVar("E", Transcribe, AudioStart, AudioChunk)
_RATES = range(8000, 96001)
_WIDTHS = (1, 2, 4)
_MAX_CHANNELS = 8


@dataclass(frozen=True)
class WyomingLimits:
    """What one client may send; checked on each event's header, before its body is read."""

    max_payload_bytes: int = 1 << 20
    max_data_bytes: int = 64 * 1024
    idle_timeout_s: float = 60.0
    max_connections: int = 16


class Refused(Exception):
    """The client broke a limit; it is told why and disconnected."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


def _length(header: dict[str, object], key: str, limit: int) -> int:
    value = header.get(key) or 0
    if not isinstance(value, int) or value < 0:
        raise Refused("invalid_event", f"{key} must be a non-negative integer")
    if value > limit:
        raise Refused("payload_too_large", f"{key} {value} is over the limit of {limit} bytes")
    return value


async def read_event(reader: asyncio.StreamReader, limits: WyomingLimits) -> Event | None:
    """The next event, its lengths checked before the bytes they announce are read."""
    try:
        line = await reader.readline()
    except ValueError:  # a line longer than the reader's limit
        raise Refused("invalid_event", "event header too long") from None
    if not line:
        return None
    try:
        header = json.loads(line)
    except ValueError:
        raise Refused("invalid_event", "event header is not JSON") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise Refused("invalid_event", "event header has no type")
    data_length = _length(header, "data_length", limits.max_data_bytes)
    payload_length = _length(header, "payload_length", limits.max_payload_bytes)
    data = header.get("data") or {}
    try:
        if data_length:
            data.update(json.loads(await reader.readexactly(data_length)))
        payload = await reader.readexactly(payload_length) if payload_length else None
    except asyncio.IncompleteReadError:
        return None
    except (ValueError, TypeError, AttributeError):
        raise Refused("invalid_event", "event data is not a JSON object") from None
    return Event(type=header["type"], data=data, payload=payload)


def _parsed(kind: type[E], event: Event) -> E:
    try:
        return kind.from_event(event)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Refused("invalid_event", f"malformed {event.type} event") from None


def _check_format(rate: object, width: object, channels: object) -> None:
    if (
        not isinstance(rate, int)
        or rate not in _RATES
        or width not in _WIDTHS
        or not isinstance(channels, int)
        or not 1 <= channels <= _MAX_CHANNELS
    ):
        raise Refused(
            "unsupported_audio",
            f"audio of {rate} Hz, {width} bytes, {channels} channels is not supported "
            f"(8000-96000 Hz, 1, 2 or 4 bytes, 1-{_MAX_CHANNELS} channels)",
        )


def describe(service: InferenceService) -> Info:
    info = service.info
    model = AsrModel(
        name=info.model,
        attribution=_ATTRIBUTION,
        installed=True,
        description=f"{info.model} ({info.engine}, {info.precision}) on {info.provider}",
        version=__version__,
        languages=[lang for lang in info.languages if lang != "multilingual"] or ["en"],
    )
    program = AsrProgram(
        name="voxtray",
        attribution=_ATTRIBUTION,
        installed=True,
        description="Voxtray speech-to-text",
        version=__version__,
        models=[model],
    )
    return Info(asr=[program])


class VoxtrayEventHandler(AsyncEventHandler):
    """One client connection; audio is buffered until audio-stop, within the duration
    limit, which is checked before a chunk is converted."""

    def __init__(
        self,
        service: InferenceService,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        limits: WyomingLimits = WyomingLimits(),
    ) -> None:
        super().__init__(reader, writer)
        self.service = service
        self.limits = limits
        self._converter = AudioChunkConverter(rate=SAMPLE_RATE, width=2, channels=1)
        self._pcm = bytearray()
        self._seconds = 0.0
        self._language: str | None = None

    async def run(self) -> None:
        """Events until the client leaves, idles past the limit or breaks a limit."""
        try:
            while True:
                async with asyncio.timeout(self.limits.idle_timeout_s):
                    event = await read_event(self.reader, self.limits)
                if event is None or not await self.handle_event(event):
                    break
        except TimeoutError:
            pass
        except Refused as exc:
            await self._refuse(exc)
        except ConnectionError:
            pass
        finally:
            self._reset()
            self.writer.close()

    async def _refuse(self, exc: Refused) -> None:
        with contextlib.suppress(ConnectionError):
            await self.write_event(Error(text=exc.text, code=exc.code).event())

    async def handle_event(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self.write_event(describe(self.service).event())
        elif Transcribe.is_type(event.type):
            self._language = _parsed(Transcribe, event).language
        elif AudioStart.is_type(event.type):
            start = _parsed(AudioStart, event)
            _check_format(start.rate, start.width, start.channels)
            self._reset()
        elif AudioChunk.is_type(event.type):
            self._add(_parsed(AudioChunk, event))
        elif AudioStop.is_type(event.type):
            await self._finish()
            self._reset()
        return True

    def _reset(self) -> None:
        self._pcm = bytearray()
        self._seconds = 0.0

    def _add(self, chunk: AudioChunk) -> None:
        _check_format(chunk.rate, chunk.width, chunk.channels)
        self._seconds += len(chunk.audio) / (chunk.rate * chunk.width * chunk.channels)
        if self._seconds > self.service.max_audio_s:
            self._pcm = bytearray()  # the rest is read and dropped; audio-stop hears why
            return
        self._pcm += self._converter.convert(chunk).audio

    async def _finish(self) -> None:
        if self._seconds > self.service.max_audio_s:
            limit = f"audio longer than {self.service.max_audio_s:.0f} s"
            await self.write_event(Error(text=limit, code="audio_too_long").event())
            return
        pcm, self._pcm = self._pcm, bytearray()
        self._seconds = 0.0
        audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / np.float32(32768.0)
        del pcm
        try:
            future = self.service.submit(lambda: self.service.transcribe(audio))
            result: TranscriptionResult = await asyncio.wrap_future(future)
        except QueueFull as exc:
            await self.write_event(Error(text=str(exc), code="server_busy").event())
            return
        except BadInputError as exc:
            await self.write_event(Error(text=str(exc), code="invalid_audio").event())
            return
        transcript = Transcript(text=result.text, language=self._language or "en").event()
        # Extra keys ride along; Wyoming clients read only the ones they know.
        data = dict(transcript.data or {})
        data["voxtray"] = where_it_ran(self.service.info, result)
        await self.write_event(Event(type=transcript.type, data=data))


async def serve_wyoming(
    service: InferenceService, sock: socket.socket, limits: WyomingLimits = WyomingLimits()
) -> None:
    """Accept Wyoming clients on the bound, listening `sock` until cancelled."""
    open_now = 0

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal open_now
        handler = VoxtrayEventHandler(service, reader, writer, limits)
        if open_now >= limits.max_connections:
            busy = f"server busy: {limits.max_connections} Wyoming connections open"
            await handler._refuse(Refused("server_busy", busy))
            writer.close()
            return
        open_now += 1
        try:
            await handler.run()
        finally:
            open_now -= 1
            release_free_memory()

    server = await asyncio.start_server(connected, sock=sock)
    async with server:
        await server.serve_forever()
