"""The Wyoming protocol server (Home Assistant): describe -> info, and transcribe,
audio-start, audio-chunk..., audio-stop -> transcript, on the same inference worker as
the HTTP API. Wyoming has no authentication by design."""

from __future__ import annotations

import asyncio
import socket

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
from voxtray.serve.formats import where_it_ran
from voxtray.serve.service import InferenceService, QueueFull, TranscriptionResult

_ATTRIBUTION = Attribution(name="Voxtray", url="https://github.com/voxtray/voxtray")


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
    """One client connection; audio is buffered until audio-stop, within the duration limit."""

    def __init__(
        self,
        service: InferenceService,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        super().__init__(reader, writer)
        self.service = service
        self._converter = AudioChunkConverter(rate=SAMPLE_RATE, width=2, channels=1)
        self._chunks: list[bytes] = []
        self._bytes = 0
        self._too_long = False
        self._language: str | None = None

    async def handle_event(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self.write_event(describe(self.service).event())
        elif Transcribe.is_type(event.type):
            self._language = Transcribe.from_event(event).language
        elif AudioStart.is_type(event.type):
            self._reset()
        elif AudioChunk.is_type(event.type):
            self._add(AudioChunk.from_event(event))
        elif AudioStop.is_type(event.type):
            await self._finish()
            self._reset()
        return True

    def _reset(self) -> None:
        self._chunks = []
        self._bytes = 0
        self._too_long = False

    def _add(self, chunk: AudioChunk) -> None:
        if self._too_long:
            return
        audio = self._converter.convert(chunk).audio
        self._bytes += len(audio)
        if self._bytes > self.service.max_audio_s * SAMPLE_RATE * 2:
            self._too_long = True
            self._chunks = []
        else:
            self._chunks.append(audio)

    async def _finish(self) -> None:
        if self._too_long:
            limit = f"audio longer than {self.service.max_audio_s:.0f} s"
            await self.write_event(Error(text=limit, code="audio_too_long").event())
            return
        pcm = np.frombuffer(b"".join(self._chunks), dtype=np.int16)
        audio = (pcm.astype(np.float32) / 32768.0).astype(np.float32)
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


async def serve_wyoming(service: InferenceService, sock: socket.socket) -> None:
    """Accept Wyoming clients on the bound, listening `sock` until cancelled."""

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await VoxtrayEventHandler(service, reader, writer).run()

    server = await asyncio.start_server(connected, sock=sock)
    async with server:
        await server.serve_forever()
