"""The remote engines against a misbehaving server on loopback: each odd answer is one
`RemoteError` within the one deadline, the dictation falls back to the local model with
a one-line reason, and the key never leaves its origin."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable

import numpy as np
import pytest

from tests.support.remote import Behaviour, RawServer, http_answer, read_events, read_request
from voxtray.inference.recognizers.base import Transcript
from voxtray.inference.recognizers.remote_http import RemoteError, Target, _redirect
from voxtray.inference.recognizers.remote_openai import RemoteOpenAIRecognizer
from voxtray.inference.recognizers.remote_wyoming import RemoteWyomingRecognizer
from voxtray.inference.remote import FallbackRecognizer

pytestmark = [pytest.mark.faults, pytest.mark.hostile]

AUDIO = np.zeros(8000, dtype=np.float32)


def _openai(port: int, timeout_s: float = 2.0, **kwargs: str) -> RemoteOpenAIRecognizer:
    url = kwargs.pop("url", f"http://127.0.0.1:{port}")
    return RemoteOpenAIRecognizer(url, timeout_s=timeout_s, **kwargs)


def _fails_within(
    recognizer: RemoteOpenAIRecognizer | RemoteWyomingRecognizer, most_s: float
) -> str:
    began = time.monotonic()
    with pytest.raises(RemoteError) as error:
        recognizer.transcribe(AUDIO)
    assert time.monotonic() - began < most_s
    message = str(error.value)
    assert "\n" not in message
    return message


# --- OpenAI-compatible servers ---


def test_non_http_bytes_are_a_remote_error(raw_server: Callable[[Behaviour], RawServer]) -> None:
    server = raw_server(
        lambda conn: (read_request(conn), conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n" * 3))
    )
    assert "not an HTTP answer" in _fails_within(_openai(server.port), 3)


def _trickled_body(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
    for _ in range(20):  # 1 byte every 0.5 s, 10 s at most
        conn.sendall(b"{")
        time.sleep(0.5)


def _trickled_headers(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for index in range(20):
        conn.sendall(f"X-Slow-{index}: 1\r\n".encode())
        time.sleep(0.5)


@pytest.mark.parametrize("behaviour", [_trickled_body, _trickled_headers])
def test_trickling_server_is_cut_off_at_the_deadline(
    raw_server: Callable[[Behaviour], RawServer], behaviour: Behaviour
) -> None:
    server = raw_server(behaviour)
    assert "no answer within 2 s" in _fails_within(_openai(server.port), 3.5)


def test_text_null_is_not_the_word_none(raw_server: Callable[[Behaviour], RawServer]) -> None:
    server = raw_server(
        lambda conn: (read_request(conn), conn.sendall(http_answer(b'{"text": null}')))
    )
    assert "not a transcription" in _fails_within(_openai(server.port), 3)


def test_huge_claimed_length_is_refused_unread(
    raw_server: Callable[[Behaviour], RawServer],
) -> None:
    def lying(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n{}")

    server = raw_server(lying)
    assert "claims 10000000000 bytes" in _fails_within(_openai(server.port), 3)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:abc/", "http://127.0.0.1:99999/", "ftp://127.0.0.1/", "http://:80/"]
)
def test_unusable_url_is_a_remote_error_when_used(url: str) -> None:
    recognizer = RemoteOpenAIRecognizer(url, timeout_s=2)  # accepted as settings are
    _fails_within(recognizer, 1)


def test_redirect_to_another_origin_keeps_the_key(
    raw_server: Callable[[Behaviour], RawServer],
) -> None:
    elsewhere = raw_server(lambda conn: (elsewhere.received.append(read_request(conn)), None)[1])

    def redirecting(conn: socket.socket) -> None:
        read_request(conn)
        location = f"http://127.0.0.1:{elsewhere.port}/v1/audio/transcriptions"
        conn.sendall(http_answer(b"", "302 Found", f"Location: {location}\r\n"))

    server = raw_server(redirecting)
    message = _fails_within(_openai(server.port, api_key="vx-secret"), 3)
    assert "another server" in message
    time.sleep(0.3)
    assert elsewhere.received == []


def test_redirect_within_the_origin_is_followed(
    raw_server: Callable[[Behaviour], RawServer],
) -> None:
    def answering(conn: socket.socket) -> None:
        head = read_request(conn)
        server.received.append(head)
        if b"/moved" in head.split(b"\r\n")[0]:
            conn.sendall(http_answer(b'{"text": "hello"}'))
        else:
            conn.sendall(http_answer(b"", "307 Temporary Redirect", "Location: /moved\r\n"))

    server = raw_server(answering)
    assert _openai(server.port, api_key="vx-secret").transcribe(AUDIO).text == "hello"
    assert all(b"Bearer vx-secret" in head for head in server.received)
    assert len(server.received) == 2


def test_downgrade_from_https_is_not_followed() -> None:
    target = Target("https", "example.org", 443, "/v1/audio/transcriptions")
    with pytest.raises(RemoteError, match="downgrade to http"):
        _redirect(target, "http://example.org:443/v1/audio/transcriptions")


def test_credentials_in_the_url_are_split_off(
    raw_server: Callable[[Behaviour], RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    def answering(conn: socket.socket) -> None:
        server.received.append(read_request(conn))
        conn.sendall(http_answer(b'{"text": "hello"}'))

    server = raw_server(answering)
    resolved: list[object] = []
    real = socket.getaddrinfo

    def recording(host: object, *args: object, **kwargs: object) -> object:
        resolved.append(host)
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    url = f"http://user:p%40ss@127.0.0.1:{server.port}"
    recognizer = _openai(server.port, url=url)
    assert recognizer.transcribe(AUDIO).text == "hello"
    assert resolved == ["127.0.0.1"]
    assert b"Authorization: Basic dXNlcjpwQHNz" in server.received[0]  # user:p@ss
    assert "p%40ss" not in recognizer.url


# --- Wyoming servers ---


def _wyoming(port: int, timeout_s: float = 2.0) -> RemoteWyomingRecognizer:
    return RemoteWyomingRecognizer(f"tcp://127.0.0.1:{port}", timeout_s=timeout_s)


def test_wyoming_answer_claiming_a_huge_length(
    raw_server: Callable[[Behaviour], RawServer],
) -> None:
    def lying(conn: socket.socket) -> None:
        read_events(conn, "audio-stop")
        header = {"type": "transcript", "data_length": 1 << 40}
        conn.sendall(json.dumps(header).encode() + b"\n")
        time.sleep(3)

    server = raw_server(lying)
    assert "not a Wyoming server" in _fails_within(_wyoming(server.port), 3)


def test_wyoming_trickle_is_cut_off_at_the_deadline(
    raw_server: Callable[[Behaviour], RawServer],
) -> None:
    def trickling(conn: socket.socket) -> None:
        read_events(conn, "audio-stop")
        for _ in range(20):
            conn.sendall(b" ")
            time.sleep(0.5)

    server = raw_server(trickling)
    assert "no answer within 2 s" in _fails_within(_wyoming(server.port), 3.5)


def test_wyoming_events_trickled_forever_are_cut_off(
    raw_server: Callable[[Behaviour], RawServer],
) -> None:
    def chatty(conn: socket.socket) -> None:
        read_events(conn, "audio-stop")
        for _ in range(40):
            conn.sendall(b'{"type": "ping"}\n')
            time.sleep(0.25)

    server = raw_server(chatty)
    assert "no answer within 2 s" in _fails_within(_wyoming(server.port), 3.5)


def test_wyoming_non_protocol_bytes(raw_server: Callable[[Behaviour], RawServer]) -> None:
    def http_server(conn: socket.socket) -> None:
        read_events(conn, "audio-stop")
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    server = raw_server(http_server)
    assert "not a Wyoming server" in _fails_within(_wyoming(server.port), 3)


def test_wyoming_transcript_without_text(raw_server: Callable[[Behaviour], RawServer]) -> None:
    def null_text(conn: socket.socket) -> None:
        read_events(conn, "audio-stop")
        conn.sendall(b'{"type": "transcript", "data": {"text": null}}\n')

    server = raw_server(null_text)
    assert "no text" in _fails_within(_wyoming(server.port), 3)


def test_wyoming_url_with_a_bad_port_fails_when_used() -> None:
    _fails_within(RemoteWyomingRecognizer("tcp://127.0.0.1:abc", timeout_s=2), 1)


# --- the dictation's view: the local model takes over, with one line ---


class Local:
    engine = "local"
    model = "local-model"
    provider = "cpu"

    def warmup(self) -> None:
        pass

    def transcribe(self, audio: np.ndarray) -> Transcript:
        return Transcript(text="local words", tokens=[], timings_ms={}, provider="cpu")


@pytest.mark.parametrize(
    "answer",
    [b"SSH-2.0-OpenSSH_9.6\r\n", http_answer(b'{"text": null}'), http_answer(b'{"text": 5}')],
)
def test_odd_answer_falls_back_to_the_local_model(
    raw_server: Callable[[Behaviour], RawServer], answer: bytes
) -> None:
    server = raw_server(lambda conn: (read_request(conn), conn.sendall(answer)))
    reasons: list[str] = []
    recognizer = FallbackRecognizer(_openai(server.port), Local, reasons.append)
    recognizer.warmup()
    assert recognizer.transcribe(AUDIO).text == "local words"
    assert len(reasons) == 1
    assert "\n" not in reasons[0]


def test_unforeseen_failure_falls_back_too() -> None:
    class Broken(Local):
        engine = "remote"

        def transcribe(self, audio: np.ndarray) -> Transcript:
            raise OverflowError("cannot fit 'int' into an index-sized integer")

    reasons: list[str] = []
    recognizer = FallbackRecognizer(Broken(), Local, reasons.append)
    assert recognizer.transcribe(AUDIO).text == "local words"
    assert reasons == [
        "unexpected answer (OverflowError: cannot fit 'int' into an index-sized integer)"
    ]
