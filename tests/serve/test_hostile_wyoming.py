"""The real Wyoming server (stand-in model) against clients that lie about sizes and
rates, stream past the duration limit or crowd it: each is refused before its bytes are
buffered, memory stays bounded and is given back, and HTTP keeps answering."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tests.support.hostile_serving import peak_rss_mb, rss_mb, start_stand_in
from tests.support.serving import Served

pytest.importorskip("wyoming", reason="the serve extra is not installed")

pytestmark = [pytest.mark.faults, pytest.mark.hostile]

FORMAT = {"rate": 16000, "width": 2, "channels": 1}
SECOND = b"\x10\x00" * 16000
LOUD = b"\x00\x20" * 16000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("hostile-wyoming")
    server = start_stand_in(
        home,
        "--no-auth",
        "--max-audio-s",
        "120",
        "--wyoming-port",
        "0",
        "--wyoming-max-connections",
        "8",
    )
    yield server
    server.stop()


def _connect(served: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", served.wyoming_port), timeout=5)


def _event(kind: str, data: dict[str, Any] | None = None, payload: bytes = b"") -> bytes:
    body = json.dumps(data or {}).encode()
    header = {"type": kind, "data_length": len(body), "payload_length": len(payload)}
    return json.dumps(header).encode() + b"\n" + body + payload


def _answer(sock: socket.socket, within_s: float = 5.0) -> dict[str, Any]:
    """The next event the server sends (its header with data merged)."""
    sock.settimeout(within_s)
    stream = sock.makefile("rb")
    header = json.loads(stream.readline())
    data = dict(header.get("data") or {})
    if length := header.get("data_length"):
        data.update(json.loads(stream.read(length)))
    return {"type": header["type"], **data}


def _closed(sock: socket.socket, within_s: float) -> bool:
    sock.settimeout(within_s)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def _hung_up_while_sent(sock: socket.socket, most: int) -> bool:
    deadline = time.monotonic() + 10
    sent = 0
    try:
        while sent < most and time.monotonic() < deadline:
            sock.sendall(b"\0" * (1 << 20))
            sent += 1 << 20
    except OSError:
        return True
    return False


def test_chunk_declaring_a_gigabyte_is_refused_before_it_is_read(served: Served) -> None:
    before = rss_mb(served.process)
    with _connect(served) as sock:
        header = {"type": "audio-chunk", "data": FORMAT, "payload_length": 1 << 30}
        sock.sendall(json.dumps(header).encode() + b"\n")
        answer = _answer(sock)
        assert answer["type"] == "error"
        assert answer["code"] == "payload_too_large"
        assert _hung_up_while_sent(sock, 256 << 20), "the server read the payload"
    assert peak_rss_mb(served.process) < before + 64


@pytest.mark.parametrize("rate", [1, 100, 10_000_000])
def test_chunk_at_an_absurd_rate_is_refused_unconverted(served: Served, rate: int) -> None:
    with _connect(served) as sock:
        chunk = _event("audio-chunk", {**FORMAT, "rate": rate}, b"\0\1" * 30_000)
        sock.sendall(_event("audio-start", FORMAT) + chunk)
        began = time.monotonic()
        answer = _answer(sock)
        assert time.monotonic() - began < 2
    assert answer["code"] == "unsupported_audio"
    assert str(rate) in answer["text"]
    assert httpx.get(served.url + "/health", timeout=2).status_code == 200


def test_audio_start_at_an_absurd_rate_is_refused(served: Served) -> None:
    with _connect(served) as sock:
        sock.sendall(_event("audio-start", {**FORMAT, "rate": 1}))
        assert _answer(sock)["code"] == "unsupported_audio"


def test_audio_past_the_limit_is_dropped_as_it_comes(served: Served) -> None:
    before = rss_mb(served.process)
    with _connect(served) as sock:
        sock.sendall(_event("transcribe") + _event("audio-start", FORMAT))
        for _ in range(600):  # 600 s of audio, against a limit of 120 s
            sock.sendall(_event("audio-chunk", FORMAT, SECOND))
        held = rss_mb(served.process)
        sock.sendall(_event("audio-stop"))
        answer = _answer(sock)
        sock.sendall(_event("describe"))  # the connection still serves
        assert _answer(sock)["type"] == "info"
    assert answer["code"] == "audio_too_long"
    assert held < before + 16


def test_audio_within_the_limit_is_transcribed(served: Served) -> None:
    with _connect(served) as sock:
        chunks = b"".join(_event("audio-chunk", FORMAT, LOUD) for _ in range(3))
        sock.sendall(_event("transcribe") + _event("audio-start", FORMAT) + chunks)
        sock.sendall(_event("audio-stop"))
        answer = _answer(sock, within_s=30)
    assert answer["type"] == "transcript", answer


def test_crowd_of_streams_is_capped_and_memory_given_back(served: Served) -> None:
    baseline = rss_mb(served.process)
    with ExitStack() as stack:
        streams = [stack.enter_context(_connect(served)) for _ in range(8)]
        for sock in streams:
            sock.sendall(_event("audio-start", FORMAT))
            for _ in range(100):  # 100 s each, 3.2 MB
                sock.sendall(_event("audio-chunk", FORMAT, SECOND))
        crowd = [stack.enter_context(_connect(served)) for _ in range(4)]
        codes = [_answer(sock)["code"] for sock in crowd]
        httpx.get(served.url + "/health", timeout=5)  # the streams above are all read
        held = rss_mb(served.process)
    time.sleep(1.0)
    after = rss_mb(served.process)
    assert codes == ["server_busy"] * 4
    assert held < baseline + 8 * 3.2 * 2 + 32
    assert after < baseline + 16
