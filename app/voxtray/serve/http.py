"""The OpenAI-compatible HTTP API on Starlette: transcriptions (plain and streamed as
server-sent events), models, health and diagnostics, every error in OpenAI's shape."""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from voxtray.choices import ResponseFormat
from voxtray.errors import BadInputError
from voxtray.serve.auth import authorized
from voxtray.serve.formats import ApiError, headers_for, render, sse, where_it_ran
from voxtray.serve.service import AudioTooLong, InferenceService, QueueFull, TranscriptionResult
from voxtray.serve.uploads import UploadLimits, UploadSlots, UploadTimedOut, arriving, client_key
from voxtray.text.vocabulary import parse_vocabulary

ALIASES = ("whisper-1",)
"""Model names clients hard-code, answered by the served model."""
_DRAIN_LIMIT = 64 * 2**20  # read (and drop) this much of an over-size upload, so the client
# is still listening when the 413 arrives
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


@dataclass(frozen=True)
class Limits:
    upload: UploadLimits = field(default_factory=UploadLimits)
    request_timeout_s: float = 300.0


class Api:
    """Request handlers over one `InferenceService`."""

    def __init__(
        self,
        service: InferenceService,
        token: str | None,
        limits: Limits,
        selftest: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.service = service
        self.token = token
        self.limits = limits
        self._selftest = selftest
        self._selftest_report: dict[str, Any] | None = None
        self._selftest_lock = threading.Lock()
        self._uploads = UploadSlots(limits.upload.per_client)

    def app(self) -> Starlette:
        routes = [
            Route("/health", self.health, methods=["GET"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/models/{name:path}", self.model, methods=["GET"]),
            Route("/v1/diagnostics", self.diagnostics, methods=["GET"]),
            Route("/v1/audio/transcriptions", self.transcriptions, methods=["POST"]),
        ]
        handlers: Any = {ApiError: _api_error, HTTPException: _http_error, Exception: _crash}
        return Starlette(routes=routes, exception_handlers=handlers)

    # --- small endpoints ---

    async def health(self, request: Request) -> Response:
        info = self.service.info
        return JSONResponse(
            {
                "status": "ok",
                "model": info.model,
                "provider": info.provider,
                "device": info.device,
                "queue": {
                    "waiting": self.service.waiting,
                    "max": self.service.max_queue,
                    "busy": self.service.busy,
                },
                "completed": self.service.completed,
            },
            headers=headers_for(info, None),
        )

    def _model_card(self, name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 0, "owned_by": "voxtray"}

    async def models(self, request: Request) -> Response:
        self._authorize(request)
        names = [self.service.info.model, *ALIASES]
        return JSONResponse({"object": "list", "data": [self._model_card(n) for n in names]})

    async def model(self, request: Request) -> Response:
        self._authorize(request)
        name = request.path_params["name"]
        self._check_model(name)
        return JSONResponse(self._model_card(name))

    async def diagnostics(self, request: Request) -> Response:
        self._authorize(request)
        from voxtray.gpu.nvml import gpu_memory, unavailable_reason

        memory = gpu_memory(0)
        body: dict[str, Any] = {
            "service": self.service.info.to_json(),
            "gpu_memory": memory.__dict__ if memory else None,
            "gpu_unavailable": unavailable_reason(),
            "queue": {"waiting": self.service.waiting, "max": self.service.max_queue},
            "completed": self.service.completed,
        }
        if self._selftest is not None and request.query_params.get("selftest", "1") != "0":
            body["selftest"] = await self._selftest_once()
        return JSONResponse(body, headers=headers_for(self.service.info, None))

    async def _selftest_once(self) -> dict[str, Any]:
        """The self-test runs once, on the inference worker, and is remembered."""
        if self._selftest_report is None:
            assert self._selftest is not None
            future = self.service.submit(self._selftest)
            report = await asyncio.wrap_future(future)
            with self._selftest_lock:
                self._selftest_report = report
        return self._selftest_report

    # --- transcriptions ---

    async def transcriptions(self, request: Request) -> Response:
        self._authorize(request)
        client = client_key(request.client.host if request.client else "")
        # Uploads are held in memory while they arrive: admit no more than can be queued,
        # so memory stays bounded by (queue + 2) x the upload limit, and no more than a
        # few from one client, so one client cannot take every place.
        if self._uploads.full_for(client):
            await self._drain(request)  # so the client is listening when the 429 comes
            raise self._too_many_uploads()
        if self._uploads.total + self.service.waiting >= self.service.max_queue + 2:
            await self._drain(request)
            raise self._busy(self.service.retry_after_s())
        with self._uploads.held(client):
            fields, upload = await self._form(request)
        try:
            return await self._transcribe(fields, upload)
        finally:
            upload.unlink(missing_ok=True)

    def _too_many_uploads(self) -> ApiError:
        return ApiError(
            429,
            f"too many uploads in progress from this address (at most {self._uploads.per_client})",
            "too_many_uploads",
            headers={"Retry-After": "1"},
        )

    def _busy(self, retry_after_s: int) -> ApiError:
        headers = {"Retry-After": str(retry_after_s)}
        return ApiError(
            503,
            f"server busy: {self.service.max_queue} requests already waiting",
            "server_busy",
            kind="server_error",
            headers=headers,
        )

    async def _transcribe(self, fields: dict[str, str], upload: Path) -> Response:
        name = fields.get("model")
        if not name:
            raise ApiError(
                400, "you must provide a model parameter", "missing_model", param="model"
            )
        self._check_model(name)
        fmt = _parse_format(fields.get("response_format", "json"))
        language = self._language(fields.get("language", ""))
        temperature = _temperature(fields.get("temperature", "0"))
        vocabulary = _vocabulary(fields.get("prompt", ""))
        shown = fields.get("_filename", "file")
        info = self.service.info
        if fields.get("stream", "false").lower() in ("true", "1"):
            return await self._stream(upload, shown, vocabulary)

        def job() -> TranscriptionResult:
            return self.service.transcribe_file(upload, shown, vocabulary=vocabulary)

        result = await self._run(job)
        body, media = render(fmt, result, language, info, temperature)
        return Response(body, media_type=media, headers=headers_for(info, result))

    async def _run(self, job: Callable[[], TranscriptionResult]) -> TranscriptionResult:
        try:
            future = self.service.submit(job)
        except QueueFull as exc:
            raise self._busy(exc.retry_after_s) from None
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(future), self.limits.request_timeout_s
            )
        except TimeoutError:
            future.cancel()
            raise ApiError(
                504,
                f"no result within {self.limits.request_timeout_s:.0f} s",
                "timeout",
                kind="server_error",
            ) from None
        except AudioTooLong as exc:
            raise ApiError(413, str(exc), "audio_too_long", param="file") from None
        except BadInputError as exc:
            raise ApiError(400, str(exc), "invalid_audio", param="file") from None

    async def _stream(self, upload: Path, shown: str, vocabulary: tuple[str, ...]) -> Response:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def put(kind: str, value: Any) -> None:
            loop.call_soon_threadsafe(events.put_nowait, (kind, value))

        def job() -> TranscriptionResult:
            return self.service.transcribe_file(
                upload,
                shown,
                on_segment=lambda text: put("delta", text),
                on_decoded=lambda: put("decoded", None),
                vocabulary=vocabulary,
            )

        outcome = asyncio.ensure_future(self._run(job))
        outcome.add_done_callback(lambda _task: events.put_nowait(("end", None)))
        kind, _ = await events.get()
        if kind == "end":
            await outcome  # raises the request's error as a plain JSON answer
        info = self.service.info

        async def body() -> AsyncIterator[str]:
            first = True
            while (item := await events.get())[0] != "end":
                if item[0] == "delta":
                    yield sse(
                        {
                            "type": "transcript.text.delta",
                            "delta": item[1] if first else " " + item[1],
                        }
                    )
                    first = False
            try:
                result = outcome.result()
            except ApiError as exc:
                yield sse({"type": "error", **exc.body()})
                return
            yield sse(
                {
                    "type": "transcript.text.done",
                    "text": result.text,
                    "voxtray": where_it_ran(info, result),
                }
            )

        return StreamingResponse(
            body(),
            media_type="text/event-stream",
            headers={**headers_for(info, None), "Cache-Control": "no-cache"},
        )

    # --- request checks ---

    def _authorize(self, request: Request) -> None:
        if not authorized(request.headers.get("authorization"), self.token):
            raise ApiError(
                401,
                "Incorrect or missing API key: send 'Authorization: Bearer <key>'",
                "invalid_api_key",
                headers={"WWW-Authenticate": "Bearer"},
            )

    def _check_model(self, name: str) -> None:
        if name not in (self.service.info.model, *ALIASES):
            raise ApiError(
                404,
                f"The model '{name}' does not exist; this server runs '{self.service.info.model}'",
                "model_not_found",
                param="model",
            )

    def _language(self, language: str) -> str:
        languages = self.service.info.languages
        if not language:
            return languages[0] if languages and languages[0] != "multilingual" else "en"
        if not _LANGUAGE.match(language):
            raise ApiError(
                400,
                f"invalid language {language!r}; use an ISO-639-1 code",
                "invalid_language",
                param="language",
            )
        if "multilingual" not in languages and language not in languages:
            raise ApiError(
                400,
                f"{self.service.info.model} transcribes only "
                f"{', '.join(languages)}, not {language!r}",
                "unsupported_language",
                param="language",
            )
        return language

    async def _form(self, request: Request) -> tuple[dict[str, str], Path]:
        """The form fields and the uploaded file, saved to a temporary path."""
        content_type = request.headers.get("content-type", "")
        if not content_type.lower().startswith("multipart/form-data"):
            raise ApiError(
                415,
                "send the audio as multipart/form-data with a 'file' field",
                "unsupported_content_type",
            )
        if "boundary=" not in content_type:
            raise ApiError(400, "multipart/form-data without a boundary", "invalid_body")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.limits.upload.max_bytes + _DRAIN_LIMIT:
            raise ApiError(
                413,
                self._too_big(),
                "file_too_large",
                param="file",
                headers={"Connection": "close"},
            )
        body = await self._body(request)
        try:
            form = await MultiPartParser(
                request.headers,
                _once(body),
                max_files=1,
                max_fields=32,
                max_part_size=64 * 1024,
            ).parse()
        except MultiPartException as exc:
            message = f"malformed multipart body: {exc.message}"
            raise ApiError(400, message, "invalid_body") from None
        del body
        fields: dict[str, str] = {}
        upload: UploadFile | None = None
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                if key == "file":
                    upload = value
            else:
                fields[key] = value
        if upload is None:
            await form.close()
            raise ApiError(400, "the request has no 'file' field", "missing_file", param="file")
        fields["_filename"] = os.path.basename(upload.filename or "file")
        try:
            return fields, await _save(upload)
        finally:
            await form.close()

    def _too_big(self) -> str:
        return f"upload larger than {self.limits.upload.max_bytes / 2**20:.0f} MiB"

    async def _drain(self, request: Request) -> None:
        """Read and drop the body, within the size limit and the upload's time and rate."""
        size = 0
        try:
            async for chunk in arriving(request, self.limits.upload):
                size += len(chunk)
                if size > self.limits.upload.max_bytes + _DRAIN_LIMIT:
                    return
        except UploadTimedOut:
            return

    async def _body(self, request: Request) -> bytes:
        """The whole body, within the size limit and the upload's time and rate."""
        limit = self.limits.upload.max_bytes
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in arriving(request, self.limits.upload):
                size += len(chunk)
                if size > limit + _DRAIN_LIMIT:
                    break
                if size <= limit:
                    chunks.append(chunk)
        except UploadTimedOut as exc:
            raise self._timed_out(exc.too_slow) from None
        if size > limit:
            raise ApiError(413, self._too_big(), "file_too_large", param="file")
        return b"".join(chunks)

    def _timed_out(self, too_slow: bool) -> ApiError:
        upload = self.limits.upload
        if too_slow:
            rate = upload.min_bytes_per_s / 1000
            message = f"upload slower than {rate:g} kB/s after its first {upload.grace_s:g} s"
            code = "upload_too_slow"
        else:
            message = f"upload not finished within {upload.timeout_s:.0f} s"
            code = "upload_timeout"
        return ApiError(408, message, code, headers={"Connection": "close"})


async def _once(data: bytes) -> AsyncGenerator[bytes, None]:
    yield data
    yield b""


async def _save(upload: UploadFile) -> Path:
    descriptor, name = tempfile.mkstemp(prefix="voxtray-upload-")
    path = Path(name)
    size = 0
    with os.fdopen(descriptor, "wb") as stream:
        while chunk := await upload.read(1 << 20):
            size += len(chunk)
            stream.write(chunk)
    if size == 0:
        path.unlink(missing_ok=True)
        raise ApiError(400, "the uploaded file is empty", "empty_file", param="file")
    return path


def _parse_format(value: str) -> ResponseFormat:
    try:
        return ResponseFormat.parse(value)
    except ValueError as exc:
        raise ApiError(
            400, f"response_format {exc}", "invalid_response_format", param="response_format"
        ) from None


def _temperature(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 1.0:
        raise ApiError(
            400,
            f"temperature must be a number from 0 to 1, got {value!r}",
            "invalid_temperature",
            param="temperature",
        )
    return number


def _vocabulary(prompt: str) -> tuple[str, ...]:
    """The `prompt` field as this request's vocabulary: clients such as OpenWhispr send
    their dictionary there, as a comma or line separated list."""
    try:
        return parse_vocabulary(prompt)
    except BadInputError as exc:
        raise ApiError(400, str(exc), "invalid_prompt", param="prompt") from None


def _error_response(error: ApiError) -> Response:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return _error_response(ApiError(exc.status_code, str(exc.detail), code))


async def _crash(request: Request, exc: Exception) -> Response:
    message = f"internal error: {exc.__class__.__name__}: {exc}"
    return _error_response(ApiError(500, message, "internal_error", kind="server_error"))
