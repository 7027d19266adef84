"""Bad requests to `voxtray serve`: each answered with an OpenAI-shaped JSON error and the
right status, and the server keeps working. Also Home Assistant's `wyoming` client
against the Wyoming server."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.audio import Clip, read_wav
from tests.support.recognition import BELLY_CLIP, BELLY_WER, assert_heard
from tests.support.serving import (
    Served,
    long_quiet_flac,
    serving_tiny_en,
)
from voxtray.models.store import ModelStore

pytest.importorskip("starlette", reason="the serve extra is not installed")
wyoming_client = pytest.importorskip("wyoming.client", reason="the serve extra is not installed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore) -> Iterator[Served]:
    flags = ["--max-upload-mb", "1", "--max-audio-s", "60", "--body-timeout-s", "2"]
    tmp = tmp_path_factory.mktemp("serve")
    with serving_tiny_en(tmp, model_store, *flags, "--wyoming-port", "0") as server:
        yield server


@pytest.fixture(scope="module")
def clip(eval_clips: list[Clip]) -> Clip:
    return next(c for c in eval_clips if c.id == BELLY_CLIP)


def _post(served: Served, files: Any = None, data: Any = None, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {served.token}", **kwargs.pop("headers", {})}
    return httpx.post(
        served.base_url + "/audio/transcriptions",
        headers=headers,
        files=files,
        data=data,
        timeout=60,
        **kwargs,
    )


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "code", "param"}
    assert error["code"] == code
    assert error["message"]
    assert "\n" not in error["message"]
    assert "Traceback" not in error["message"]
    return dict(error)


MODEL = {"model": "whisper-1"}


@pytest.mark.parametrize(
    ("content", "status", "code"),
    [
        (b"this is a text file, not audio\n" * 20, 400, "invalid_audio"),
        (b"", 400, "empty_file"),
        (b"RIFF\x24\x08\x00\x00WAVEfmt ", 400, "invalid_audio"),  # cut inside the header
        (bytes(range(256)) * 64, 400, "invalid_audio"),
    ],
    ids=["text", "empty", "truncated-header", "random-bytes"],
)
def test_bad_files(served: Served, content: bytes, status: int, code: str) -> None:
    error = _error(_post(served, {"file": ("upload.wav", content)}, MODEL), status, code)
    assert "/tmp" not in error["message"]


def test_truncated_data_still_transcribed(served: Served, clip: Clip) -> None:
    data = clip.path.read_bytes()
    answer = _post(served, {"file": ("cut.wav", data[: len(data) // 2])}, MODEL)
    assert answer.status_code == 200
    assert answer.json()["text"]


def test_missing_and_wrong_fields(served: Served, clip: Clip) -> None:
    audio = {"file": ("a.wav", clip.path.read_bytes(), "audio/wav")}
    _error(_post(served, audio, {}), 400, "missing_model")
    _error(_post(served, {"other": ("a.wav", b"x")}, MODEL), 400, "missing_file")
    _error(_post(served, audio, {"model": "gpt-9"}), 404, "model_not_found")
    _error(
        _post(served, audio, {**MODEL, "response_format": "xml"}), 400, "invalid_response_format"
    )
    _error(_post(served, audio, {**MODEL, "temperature": "hot"}), 400, "invalid_temperature")
    _error(_post(served, audio, {**MODEL, "language": "fr"}), 400, "unsupported_language")
    _error(_post(served, audio, {**MODEL, "language": "<script>"}), 400, "invalid_language")


def test_wrong_content_type_and_routes(served: Served) -> None:
    _error(_post(served, json={"model": "whisper-1"}), 415, "unsupported_content_type")
    _error(
        _post(
            served,
            content=b"--x\r\nbroken",
            headers={"content-type": "multipart/form-data; boundary=x"},
        ),
        400,
        "missing_file",
    )
    _error(
        _post(served, content=b"--x\r\nbroken", headers={"content-type": "multipart/form-data"}),
        400,
        "invalid_body",
    )
    _error(httpx.get(served.url + "/v2/nothing", timeout=5), 404, "not_found")
    _error(
        httpx.get(served.base_url + "/audio/transcriptions", timeout=5), 405, "method_not_allowed"
    )
    _error(httpx.get(served.base_url + "/models", timeout=5), 401, "invalid_api_key")


def test_huge_upload(served: Served) -> None:
    _error(_post(served, {"file": ("big.wav", bytes(3 * 2**20))}, MODEL), 413, "file_too_large")


def test_long_audio(served: Served, tmp_path: Path) -> None:
    flac = long_quiet_flac(tmp_path / "long.flac", 120).read_bytes()
    _error(_post(served, {"file": ("long.flac", flac)}, MODEL), 413, "audio_too_long")


def test_slow_loris_upload(served: Served, clip: Clip) -> None:
    host, port = served.url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=10) as slow:
        slow.sendall(
            b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + served.token.encode() + b"\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n"
        )
        # While one client dribbles its body, the others are served.
        assert httpx.get(served.url + "/health", timeout=5).status_code == 200
        answer = b""
        for _ in range(6):
            slow.sendall(b"--b\r\n")
            time.sleep(0.5)
            slow.settimeout(0.01)
            try:
                answer = slow.recv(4096)
                break
            except TimeoutError:
                continue
            finally:
                slow.settimeout(10)
        answer = answer or slow.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b'"upload_timeout"' in answer
    assert time.monotonic() - started < 8


def test_still_healthy_after_all_that(served: Served, clip: Clip) -> None:
    answer = _post(served, {"file": ("a.wav", clip.path.read_bytes())}, MODEL)
    assert answer.status_code == 200
    assert_heard(clip.reference, answer.json()["text"], BELLY_WER)
    assert served.process.poll() is None


# --- Wyoming -----------------------------------------------------------------------------


async def _wyoming_transcribe(port: int, pcm: bytes, rate: int = 16000) -> tuple[Any, Any]:
    from wyoming.asr import Transcribe
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.info import Describe

    async with wyoming_client.AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Describe().event())
        info = await asyncio.wait_for(client.read_event(), 10)
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(rate=rate, width=2, channels=1).event())
        step = rate // 10 * 2
        for start in range(0, len(pcm), step):
            chunk = AudioChunk(rate=rate, width=2, channels=1, audio=pcm[start : start + step])
            await client.write_event(chunk.event())
        await client.write_event(AudioStop().event())
        answer = await asyncio.wait_for(client.read_event(), 120)
    return info, answer


def test_wyoming_transcribes(served: Served, clip: Clip) -> None:
    from wyoming.asr import Transcript
    from wyoming.info import Info

    pcm = (read_wav(clip.path) * 32767).astype("<i2").tobytes()
    info_event, answer = asyncio.run(_wyoming_transcribe(served.wyoming_port, pcm))
    info = Info.from_event(info_event)
    assert info.asr[0].models[0].name == "whisper-tiny.en"
    assert info.asr[0].models[0].languages == ["en"]
    assert Transcript.is_type(answer.type)
    text = Transcript.from_event(answer).text
    assert_heard(clip.reference, text, BELLY_WER)
    assert answer.data["voxtray"]["provider"] == "cpu"


def test_wyoming_resamples_and_limits(served: Served, clip: Clip) -> None:
    import numpy as np
    from wyoming.error import Error

    audio = read_wav(clip.path)
    at_48k = np.repeat(audio, 3)  # crude, but speech survives it
    pcm = (at_48k * 32767).astype("<i2").tobytes()
    _, answer = asyncio.run(_wyoming_transcribe(served.wyoming_port, pcm, rate=48000))
    assert_heard(clip.reference, answer.data["text"], BELLY_WER)
    too_long = bytes(2 * 16000 * 61)
    _, refused = asyncio.run(_wyoming_transcribe(served.wyoming_port, too_long))
    assert Error.is_type(refused.type)
    assert Error.from_event(refused).code == "audio_too_long"
