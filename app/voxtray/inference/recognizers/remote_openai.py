"""A recogniser that sends audio to an OpenAI-compatible transcription server
(`voxtray serve`, faster-whisper-server, ...) with nothing but the standard library."""

from __future__ import annotations

import io
import json
import secrets
import time
import wave
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.inference.recognizers.base import Transcript, warmup_audio
from voxtray.inference.recognizers.remote_http import (
    Answer,
    Deadline,
    RemoteError,
    Target,
    parse_target,
    post,
    redact,
)
from voxtray.text.vocabulary import whisper_prompt

__all__ = ["RemoteError", "RemoteOpenAIRecognizer", "api_base", "server_timings", "wav_bytes"]

SAMPLE_RATE = 16000
MAX_PROMPT_CHARS = 60_000


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
        self._raw_url = api_base(url) + "/audio/transcriptions"
        self.url = redact(self._raw_url)
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

    def _target(self) -> Target:
        target = parse_target(self._raw_url, ("http", "https"))
        self.url = target.shown
        return target

    def _headers(self, target: Target, content_type: str) -> dict[str, str]:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        auth = f"Bearer {self.api_key}" if self.api_key else target.basic_auth()
        if auth:
            headers["Authorization"] = auth
        return headers

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        target = self._target()
        fields = {"model": self.requested_model, "response_format": "json"}
        if self.language:
            fields["language"] = self.language
        if self.prompt:
            fields["prompt"] = self.prompt
        body, content_type = _multipart(fields, wav_bytes(audio))
        began = time.perf_counter()
        with Deadline(self.timeout_s, self.url) as deadline:
            answer = post(target, body, self._headers(target, content_type), deadline)
        elapsed = 1000 * (time.perf_counter() - began)
        if answer.status >= 300:
            raise RemoteError(f"{self.url} refused: {answer.status} {_reason(answer)}")
        text = _text(answer.body, self.url)
        reply_headers = answer.headers
        self._provider = "remote:" + (reply_headers.get("x-voxtray-provider") or "unknown")
        self.model = reply_headers.get("x-voxtray-model") or self.requested_model
        self.device = reply_headers.get("x-voxtray-device", "")
        timings = {"remote": round(elapsed, 2), **server_timings(reply_headers, elapsed)}
        return Transcript(text=text, tokens=[], timings_ms=timings, provider=self._provider)


def _text(body: bytes, url: str) -> str:
    try:
        text = json.loads(body)["text"]
    except (ValueError, KeyError, TypeError):
        text = None
    if not isinstance(text, str):
        raise RemoteError(f"{url}: the answer is not a transcription")
    return text.strip()


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


def _reason(answer: Answer) -> str:
    """The server's own one-line reason where it sent OpenAI's error shape."""
    try:
        body: Any = json.loads(answer.body[:65536] or b"{}")
        message = body["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = ""
    return " ".join(str(message).split())[:200]
