"""A recogniser that speaks Wyoming (Home Assistant's JSONL + PCM protocol over TCP) to a
transcription server, with nothing but the standard library.

Wyoming's `transcribe` event has no field for a vocabulary or prompt, so the user's
vocabulary does not reach a Wyoming server (the local fallback still uses it)."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.inference.recognizers.base import Transcript
from voxtray.inference.recognizers.remote_http import (
    Deadline,
    RemoteError,
    parse_target,
    redact,
)

SAMPLE_RATE = 16000
_MAX_EVENTS = 10_000  # events read for one answer before the server is declared broken
_MAX_LINE = 1 << 20
_MAX_PAYLOAD = 16 << 20


def _address(url: str) -> tuple[str, int]:
    target = parse_target(url if "://" in url else "tcp://" + url, ("tcp",))
    return target.host, target.port


def _length(header: dict[str, Any], key: str, limit: int) -> int:
    value = header.get(key) or 0
    if not isinstance(value, int) or not 0 <= value <= limit:
        raise ValueError(f"{key} {value!r}")
    return value


class _Connection:
    """One TCP connection, reading and writing Wyoming events, all within `deadline`."""

    def __init__(self, url: str, deadline: Deadline) -> None:
        self.url = url
        self.deadline = deadline
        address = _address(url)
        try:
            self.sock = socket.create_connection(address, timeout=deadline.timeout_s)
        except TimeoutError:
            raise deadline.error() from None
        except OSError as exc:
            raise RemoteError(f"cannot reach {url}: {exc.strerror or exc}") from None
        deadline.watch(self.sock)
        self.stream = self.sock.makefile("rb")

    def close(self) -> None:
        self.stream.close()
        self.sock.close()

    def _lost(self, exc: OSError | None = None) -> RemoteError:
        if self.deadline.expired:
            return self.deadline.error()
        if exc is None:
            return RemoteError(f"{self.url}: the server closed the connection")
        return RemoteError(f"{self.url}: connection lost ({exc.strerror or exc})")

    def write(self, kind: str, data: dict[str, Any] | None = None, payload: bytes = b"") -> None:
        body = json.dumps(data or {}).encode()
        header = {"type": kind, "data_length": len(body), "payload_length": len(payload)}
        try:
            self.sock.sendall(json.dumps(header).encode() + b"\n" + body + payload)
        except OSError as exc:
            raise self._lost(exc) from None

    def read(self) -> tuple[str, dict[str, Any]]:
        try:
            line = self.stream.readline(_MAX_LINE)
            if not line.endswith(b"\n"):
                raise self._lost() if len(line) < _MAX_LINE else ValueError("line too long")
            header = json.loads(line)
            data = dict(header.get("data") or {})
            if length := _length(header, "data_length", _MAX_LINE):
                data.update(json.loads(self._exactly(length)))
            self._skip(_length(header, "payload_length", _MAX_PAYLOAD))
        except TimeoutError:
            raise self.deadline.error() from None
        except (ValueError, TypeError, AttributeError):
            if self.deadline.expired:
                raise self.deadline.error() from None
            raise RemoteError(f"{self.url}: not a Wyoming server") from None
        except OSError as exc:
            raise self._lost(exc) from None
        return str(header.get("type", "")), data

    def _exactly(self, length: int) -> bytes:
        data = self.stream.read(length)
        if len(data) != length:
            raise self._lost()
        return bytes(data)

    def _skip(self, length: int) -> None:
        while length > 0:
            length -= len(self._exactly(min(length, 1 << 16)))

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
        self.url = redact(url)
        self._raw_url = url
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
        with Deadline(self.timeout_s, self.url) as deadline:
            connection = _Connection(self._raw_url, deadline)
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
        with Deadline(self.timeout_s, self.url) as deadline:
            connection = _Connection(self._raw_url, deadline)
            try:
                data = self._exchange(connection, pcm)
            finally:
                connection.close()
        extra = data.get("voxtray")
        ran: dict[str, Any] = extra if isinstance(extra, dict) else {}
        self._provider = "remote:" + str(ran.get("provider") or "unknown")
        timings = {"remote": round(1000 * (time.perf_counter() - began), 2)}
        if isinstance(ran.get("inference_ms"), int | float):
            timings["server_inference"] = float(ran["inference_ms"])
        text = data.get("text")
        if not isinstance(text, str):
            raise RemoteError(f"{self.url}: the transcript has no text")
        return Transcript(text=text.strip(), tokens=[], timings_ms=timings, provider=self._provider)

    def _exchange(self, connection: _Connection, pcm: bytes) -> dict[str, Any]:
        fmt = {"rate": SAMPLE_RATE, "width": 2, "channels": 1}
        request: dict[str, Any] = {"language": self.language} if self.language else {}
        if self.requested_model:
            request["name"] = self.requested_model
        connection.write("transcribe", request)
        connection.write("audio-start", fmt)
        step = SAMPLE_RATE * 2  # one second of 16-bit samples a chunk
        for start in range(0, len(pcm), step):
            connection.write("audio-chunk", fmt, pcm[start : start + step])
        connection.write("audio-stop")
        return connection.wait_for("transcript")
