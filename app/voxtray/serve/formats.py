"""Response bodies of the OpenAI-compatible API: errors, the five transcription formats
(SRT and WebVTT through the transcript writers `voxtray transcribe` uses), server-sent
events, and the headers that say where a request ran."""

from __future__ import annotations

import json
from typing import Any

from voxtray.choices import ResponseFormat
from voxtray.serve.service import ServiceInfo, TranscriptionResult
from voxtray.transcripts.formats import cues_from, to_srt, to_vtt

LANGUAGE_NAMES = {"en": "english", "de": "german", "fr": "french", "es": "spanish"}


class ApiError(Exception):
    """An error answered as OpenAI does: `{"error": {"message", "type", "code", "param"}}`."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str,
        *,
        kind: str = "invalid_request_error",
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.kind = kind
        self.param = param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "code": self.code,
                "param": self.param,
            }
        }


def where_it_ran(info: ServiceInfo, result: TranscriptionResult | None) -> dict[str, Any]:
    """The provider, device, model, precision and timings of one request."""
    ran: dict[str, Any] = {
        "provider": (result.provider if result else "") or info.provider,
        "device": info.device,
        "model": info.model,
        "engine": info.engine,
        "precision": info.precision,
    }
    if result is not None:
        ran.update(
            queue_ms=round(result.queue_ms, 1),
            decode_ms=round(result.decode_ms, 1),
            vad_ms=round(result.vad_ms, 1),
            inference_ms=round(result.inference_ms, 1),
            audio_s=result.duration_s,
        )
    return ran


def headers_for(info: ServiceInfo, result: TranscriptionResult | None) -> dict[str, str]:
    """`X-Voxtray-*` headers carrying `where_it_ran` (ASCII only, as HTTP wants)."""
    headers = {}
    for key, value in where_it_ran(info, result).items():
        name = "X-Voxtray-" + "-".join(part.capitalize() for part in key.split("_"))
        text = str(value).encode("ascii", "replace").decode("ascii")
        headers[name] = text
    return headers


def verbose_json(
    result: TranscriptionResult, language: str, info: ServiceInfo, temperature: float
) -> dict[str, Any]:
    segments = [
        {
            "id": n,
            "seek": 0,
            "start": s.start_s,
            "end": s.end_s,
            "text": s.text,
            "tokens": s.tokens,
            "temperature": temperature,
            "avg_logprob": 0.0,
            "compression_ratio": 1.0,
            "no_speech_prob": s.no_speech_prob if s.no_speech_prob is not None else 0.0,
        }
        for n, s in enumerate(result.segments)
    ]
    return {
        "task": "transcribe",
        "language": LANGUAGE_NAMES.get(language, language),
        "duration": result.duration_s,
        "text": result.text,
        "segments": segments,
        "voxtray": where_it_ran(info, result),
    }


def render(
    fmt: ResponseFormat,
    result: TranscriptionResult,
    language: str,
    info: ServiceInfo,
    temperature: float,
) -> tuple[str, str]:
    """The body and its media type for `fmt`."""
    if fmt is ResponseFormat.TEXT:
        return result.text + "\n", "text/plain; charset=utf-8"
    if fmt is ResponseFormat.SRT:
        return to_srt(cues_from(result.segments, result.duration_s)), "text/plain; charset=utf-8"
    if fmt is ResponseFormat.VTT:
        return to_vtt(cues_from(result.segments, result.duration_s)), "text/vtt; charset=utf-8"
    if fmt is ResponseFormat.VERBOSE_JSON:
        body: dict[str, Any] = verbose_json(result, language, info, temperature)
    else:
        body = {"text": result.text, "usage": {"type": "duration", "seconds": result.duration_s}}
    return json.dumps(body, ensure_ascii=False), "application/json"


def sse(event: dict[str, Any]) -> str:
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
