"""A recogniser that sends audio to an OpenAI-compatible transcription server
(`voxtray serve`, faster-whisper-server, ...) with nothing but the standard library."""

from __future__ import annotations

import io
import json
import secrets
import socket
import ssl
import time
import urllib.error
import urllib.request
import wave
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.errors import NetworkError
from voxtray.inference.recognizers.base import Transcript, warmup_audio
from voxtray.text.vocabulary import whisper_prompt

SAMPLE_RATE = 16000
MAX_PROMPT_CHARS = 60_000


class RemoteError(NetworkError):
    """The server could not be reached, was too slow, or refused the request."""


def wav_bytes(audio: NDArray[np.float32]) -> bytes:
    """16 kHz mono float32 as a 16-bit PCM WAV file."""
    pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as stream:
        stream.setnchannels(1)
        stream.setsampwidth(2)
        stream.setframerate(SAMPLE_RATE)
        stream.writeframes(pcm)
    return buffer.getvalue()


def _multipart(fields: dict[str, str], audio: bytes) -> tuple[bytes, str]:
    boundary = "voxtray-" + secrets.token_hex(12)
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="audio.wav"\r\n'
        "Content-Type: audio/wav\r\n\r\n".encode()
        + audio
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def prompt_field(vocabulary: tuple[str, ...]) -> str:
    """The vocabulary as the OpenAI `prompt` field: Whisper servers take it as the
    initial prompt, `voxtray serve` as that request's vocabulary. Entries past
    `MAX_PROMPT_CHARS` are left out (servers limit a form field's size)."""
    kept: list[str] = []
    size = 0
    for entry in vocabulary:
        size += len(entry) + 2
        if size > MAX_PROMPT_CHARS:
            break
        kept.append(entry)
    return whisper_prompt(tuple(kept))


def api_base(url: str) -> str:
    """`http://host:8000`, `.../v1` or `.../v1/` to the `.../v1` base."""
    base = url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


class RemoteOpenAIRecognizer:
    """Transcribes through `POST /v1/audio/transcriptions`.

    The provider is `remote:<what the server reported>` (Voxtray's `X-Voxtray-Provider`
    header) or `remote:unknown` for servers that do not say.
    """

    engine = "remote"

    def __init__(
        self,
        url: str,
        *,
        model: str = "whisper-1",
        api_key: str | None = None,
        language: str = "en",
        timeout_s: float = 30.0,
        vocabulary: tuple[str, ...] = (),
    ) -> None:
        self.url = api_base(url) + "/audio/transcriptions"
        self.model = model
        self.requested_model = model
        self.api_key = api_key
        self.language = language
        self.timeout_s = timeout_s
        self.prompt = prompt_field(vocabulary)
        self._provider = "remote:unknown"
        self.device = ""  # the server's CPU or GPU, where it says (X-Voxtray-Device)

    @property
    def provider(self) -> str:
        return self._provider

    def warmup(self) -> None:
        self.transcribe(warmup_audio())

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        fields = {"model": self.requested_model, "response_format": "json"}
        if self.language:
            fields["language"] = self.language
        if self.prompt:
            fields["prompt"] = self.prompt
        body, content_type = _multipart(fields, wav_bytes(audio))
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        began = time.perf_counter()
        payload, reply_headers = self._send(request)
        elapsed = 1000 * (time.perf_counter() - began)
        try:
            text = str(json.loads(payload)["text"]).strip()
        except (ValueError, KeyError, TypeError):
            raise RemoteError(f"{self.url}: the answer is not a transcription") from None
        self._provider = "remote:" + (reply_headers.get("x-voxtray-provider") or "unknown")
        self.model = reply_headers.get("x-voxtray-model") or self.requested_model
        self.device = reply_headers.get("x-voxtray-device", "")
        timings = {"remote": round(elapsed, 2), **server_timings(reply_headers, elapsed)}
        return Transcript(text=text, tokens=[], timings_ms=timings, provider=self._provider)

    def _send(self, request: urllib.request.Request) -> tuple[bytes, dict[str, str]]:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                headers = {k.lower(): v for k, v in reply.headers.items()}
                return bytes(reply.read(16 * 2**20)), headers
        except urllib.error.HTTPError as exc:
            raise RemoteError(f"{self.url} refused: {exc.code} {_reason(exc)}") from None
        except TimeoutError:
            raise RemoteError(f"{self.url}: no answer within {self.timeout_s:g} s") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError | socket.timeout):
                raise RemoteError(f"{self.url}: no answer within {self.timeout_s:g} s") from None
            text = getattr(reason, "strerror", None) or str(reason)
            raise RemoteError(f"cannot reach {self.url}: {text}") from None
        except (OSError, ssl.SSLError) as exc:
            raise RemoteError(f"{self.url}: {exc.__class__.__name__}: {exc}") from None


_SERVER_STAGES = {
    "server_queue": "x-voxtray-queue-ms",
    "server_decode": "x-voxtray-decode-ms",
    "server_vad": "x-voxtray-vad-ms",
    "server_inference": "x-voxtray-inference-ms",
}


def server_timings(headers: dict[str, str], elapsed_ms: float) -> dict[str, float]:
    """The stages `voxtray serve` reports in its headers, and `network`: the rest of the
    round trip (transfer, HTTP, multipart); empty for servers that do not say."""
    timings: dict[str, float] = {}
    for stage, header in _SERVER_STAGES.items():
        try:
            timings[stage] = float(headers[header])
        except (KeyError, ValueError):
            continue
    if timings:
        timings["network"] = round(max(0.0, elapsed_ms - sum(timings.values())), 2)
    return timings


def _reason(exc: urllib.error.HTTPError) -> str:
    """The server's own one-line reason where it sent OpenAI's error shape."""
    try:
        body: Any = json.loads(exc.read(65536) or b"{}")
        message = body["error"]["message"]
    except (ValueError, KeyError, TypeError, OSError):
        message = exc.reason
    return " ".join(str(message).split())[:200]
