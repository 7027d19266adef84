"""A recogniser that speaks Wyoming (Home Assistant's JSONL + PCM protocol over TCP) to a
transcription server, with nothing but the standard library.

Wyoming's `transcribe` event has no field for a vocabulary or prompt, so the user's
vocabulary does not reach a Wyoming server (the local fallback still uses it)."""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from urllib.parse import urlparse

import numpy as np
from numpy.typing import NDArray

from voxtray.inference.recognizers.base import Transcript
from voxtray.inference.recognizers.remote_openai import RemoteError

SAMPLE_RATE = 16000
_MAX_EVENTS = 10_000  # events read for one answer before the server is declared broken
_MAX_LINE = 1 << 20


def _address(url: str) -> tuple[str, int]:
    parsed = urlparse(url if "://" in url else "tcp://" + url)
    if parsed.scheme != "tcp" or not parsed.hostname or not parsed.port:
        raise RemoteError(f"{url}: a Wyoming server is addressed as tcp://HOST:PORT")
    return parsed.hostname, parsed.port


class _Connection:
    """One TCP connection, reading and writing Wyoming events, all within a deadline."""

    def __init__(self, address: tuple[str, int], timeout_s: float, url: str) -> None:
        self.url = url
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        try:
            self.sock = socket.create_connection(address, timeout=timeout_s)
        except TimeoutError:
            raise RemoteError(f"{url}: no answer within {timeout_s:g} s") from None
        except OSError as exc:
            raise RemoteError(f"cannot reach {url}: {exc.strerror or exc}") from None
        self.stream = self.sock.makefile("rb")

    def close(self) -> None:
        self.stream.close()
        self.sock.close()

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RemoteError(f"{self.url}: no answer within {self.timeout_s:g} s")
        return left

    def write(self, kind: str, data: dict[str, Any] | None = None, payload: bytes = b"") -> None:
        body = json.dumps(data or {}).encode()
        header = {"type": kind, "data_length": len(body), "payload_length": len(payload)}
        try:
            self.sock.settimeout(self._left())
            self.sock.sendall(json.dumps(header).encode() + b"\n" + body + payload)
        except OSError as exc:
            raise RemoteError(f"{self.url}: connection lost ({exc.strerror or exc})") from None

    def read(self) -> tuple[str, dict[str, Any]]:
        try:
            self.sock.settimeout(self._left())
            line = self.stream.readline(_MAX_LINE)
            if not line:
                raise RemoteError(f"{self.url}: the server closed the connection")
            header = json.loads(line)
            data = dict(header.get("data") or {})
            if length := int(header.get("data_length") or 0):
                data.update(json.loads(self._exactly(length)))
            if length := int(header.get("payload_length") or 0):
                self._exactly(length)
        except TimeoutError:
            raise RemoteError(f"{self.url}: no answer within {self.timeout_s:g} s") from None
        except (ValueError, TypeError, AttributeError):
            raise RemoteError(f"{self.url}: not a Wyoming server") from None
        except OSError as exc:
            raise RemoteError(f"{self.url}: connection lost ({exc.strerror or exc})") from None
        return str(header.get("type", "")), data

    def _exactly(self, length: int) -> bytes:
        data = self.stream.read(length)
        if len(data) != length:
            raise RemoteError(f"{self.url}: the server closed the connection")
        return bytes(data)

    def wait_for(self, kind: str) -> dict[str, Any]:
        for _ in range(_MAX_EVENTS):
            got, data = self.read()
            if got == kind:
                return data
            if got == "error":
                raise RemoteError(f"{self.url} refused: {data.get('text', 'error')}")
        raise RemoteError(f"{self.url}: no {kind} among {_MAX_EVENTS} events")


class RemoteWyomingRecognizer:
    """Transcribes with transcribe, audio-start, audio-chunk..., audio-stop -> transcript.

    The provider is `remote:<provider>` where the server is Voxtray (which adds it to the
    transcript), else `remote:unknown`.
    """

    engine = "remote"

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        language: str = "en",
        timeout_s: float = 30.0,
    ) -> None:
        self.url = url
        self.address = _address(url)
        self.requested_model = model
        self.model = model or "unknown"
        self.language = language
        self.timeout_s = timeout_s
        self._provider = "remote:unknown"

    @property
    def provider(self) -> str:
        return self._provider

    def describe(self) -> dict[str, Any]:
        """The server's info event."""
        connection = _Connection(self.address, self.timeout_s, self.url)
        try:
            connection.write("describe")
            return connection.wait_for("info")
        finally:
            connection.close()

    def warmup(self) -> None:
        info = self.describe()
        programs = info.get("asr") or []
        models = [m for p in programs for m in p.get("models", []) if isinstance(m, dict)]
        if not models:
            raise RemoteError(f"{self.url}: the server offers no speech-to-text model")
        if self.requested_model is None:
            self.model = str(models[0].get("name", "unknown"))

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        began = time.perf_counter()
        connection = _Connection(self.address, self.timeout_s, self.url)
        fmt = {"rate": SAMPLE_RATE, "width": 2, "channels": 1}
        try:
            request: dict[str, Any] = {"language": self.language} if self.language else {}
            if self.requested_model:
                request["name"] = self.requested_model
            connection.write("transcribe", request)
            connection.write("audio-start", fmt)
            step = SAMPLE_RATE * 2  # one second of 16-bit samples a chunk
            for start in range(0, len(pcm), step):
                connection.write("audio-chunk", fmt, pcm[start : start + step])
            connection.write("audio-stop")
            data = connection.wait_for("transcript")
        finally:
            connection.close()
        extra = data.get("voxtray")
        ran: dict[str, Any] = extra if isinstance(extra, dict) else {}
        self._provider = "remote:" + str(ran.get("provider") or "unknown")
        timings = {"remote": round(1000 * (time.perf_counter() - began), 2)}
        if "inference_ms" in ran:
            timings["server_inference"] = float(ran["inference_ms"])
        text = str(data.get("text", "")).strip()
        return Transcript(text=text, tokens=[], timings_ms=timings, provider=self._provider)
