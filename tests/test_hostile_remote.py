"""The remote engines against a misbehaving server on loopback: each odd answer is one
`RemoteError` within the one deadline, the dictation falls back to the local model with
a one-line reason, and the key never leaves its origin."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest

from app.inference.recognizers.base import Transcript
from app.inference.recognizers.remote_http import RemoteError, Target, _redirect
from app.inference.recognizers.remote_openai import RemoteOpenAIRecognizer
from app.inference.recognizers.remote_wyoming import RemoteWyomingRecognizer
from app.inference.remote import FallbackRecognizer

pytestmark = [pytest.mark.faults, pytest.mark.hostile]

AUDIO = np.zeros(8000, dtype=np.float32)
Behaviour = Callable[[socket.socket], None]


@dataclass
class Fake:
    """A loopback TCP server that answers each connection with `behaviour`."""

    behaviour: Behaviour
    sock: socket.socket = field(default_factory=socket.socket)
    received: list[bytes] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            with contextlib.suppress(OSError):
                self.behaviour(conn)


@pytest.fixture
def fake() -> Iterator[Callable[[Behaviour], Fake]]:
    made: list[Fake] = []

    def start(behaviour: Behaviour) -> Fake:
        server = Fake(behaviour)
        server.sock.bind(("127.0.0.1", 0))
        server.sock.listen(16)
        threading.Thread(target=server.serve, daemon=True).start()
        made.append(server)
        return server

    yield start
    for server in made:
        server.stop.set()
        server.sock.close()


def _request(conn: socket.socket) -> bytes:
    """The request head and its body (by Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


def _answer(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


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


def test_non_http_bytes_are_a_remote_error(fake: Callable[[Behaviour], Fake]) -> None:
    server = fake(lambda conn: (_request(conn), conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n" * 3)))
    assert "not an HTTP answer" in _fails_within(_openai(server.port), 3)


def _trickled_body(conn: socket.socket) -> None:
    _request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
    for _ in range(20):  # 1 byte every 0.5 s, 10 s at most
        conn.sendall(b"{")
        time.sleep(0.5)


def _trickled_headers(conn: socket.socket) -> None:
    _request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for index in range(20):
        conn.sendall(f"X-Slow-{index}: 1\r\n".encode())
        time.sleep(0.5)


@pytest.mark.parametrize("behaviour", [_trickled_body, _trickled_headers])
def test_trickling_server_is_cut_off_at_the_deadline(
    fake: Callable[[Behaviour], Fake], behaviour: Behaviour
) -> None:
    server = fake(behaviour)
    assert "no answer within 2 s" in _fails_within(_openai(server.port), 3.5)


def test_text_null_is_not_the_word_none(fake: Callable[[Behaviour], Fake]) -> None:
    server = fake(lambda conn: (_request(conn), conn.sendall(_answer(b'{"text": null}'))))
    assert "not a transcription" in _fails_within(_openai(server.port), 3)


def test_huge_claimed_length_is_refused_unread(fake: Callable[[Behaviour], Fake]) -> None:
    def lying(conn: socket.socket) -> None:
        _request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n{}")

    server = fake(lying)
    assert "claims 10000000000 bytes" in _fails_within(_openai(server.port), 3)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:abc/", "http://127.0.0.1:99999/", "ftp://127.0.0.1/", "http://:80/"]
)
def test_unusable_url_is_a_remote_error_when_used(url: str) -> None:
    recognizer = RemoteOpenAIRecognizer(url, timeout_s=2)  # accepted as settings are
    _fails_within(recognizer, 1)


def test_redirect_to_another_origin_keeps_the_key(fake: Callable[[Behaviour], Fake]) -> None:
    elsewhere = fake(lambda conn: (elsewhere.received.append(_request(conn)), None)[1])

    def redirecting(conn: socket.socket) -> None:
        _request(conn)
        location = f"http://127.0.0.1:{elsewhere.port}/v1/audio/transcriptions"
        conn.sendall(_answer(b"", "302 Found", f"Location: {location}\r\n"))

    server = fake(redirecting)
    message = _fails_within(_openai(server.port, api_key="vx-secret"), 3)
    assert "another server" in message
    time.sleep(0.3)
    assert elsewhere.received == []


def test_redirect_within_the_origin_is_followed(fake: Callable[[Behaviour], Fake]) -> None:
    def answering(conn: socket.socket) -> None:
        head = _request(conn)
        server.received.append(head)
        if b"/moved" in head.split(b"\r\n")[0]:
            conn.sendall(_answer(b'{"text": "hello"}'))
        else:
            conn.sendall(_answer(b"", "307 Temporary Redirect", "Location: /moved\r\n"))

    server = fake(answering)
    assert _openai(server.port, api_key="vx-secret").transcribe(AUDIO).text == "hello"
    assert all(b"Bearer vx-secret" in head for head in server.received)
    assert len(server.received) == 2


def test_downgrade_from_https_is_not_followed() -> None:
    target = Target("https", "example.org", 443, "/v1/audio/transcriptions")
    with pytest.raises(RemoteError, match="downgrade to http"):
        _redirect(target, "http://example.org:443/v1/audio/transcriptions")


def test_credentials_in_the_url_are_split_off(
    fake: Callable[[Behaviour], Fake], monkeypatch: pytest.MonkeyPatch
) -> None:
    def answering(conn: socket.socket) -> None:
        server.received.append(_request(conn))
        conn.sendall(_answer(b'{"text": "hello"}'))

    server = fake(answering)
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


def _events(conn: socket.socket, until: str) -> None:
    stream = conn.makefile("rb")
    for _ in range(1000):
        line = stream.readline()
        if not line:
            return
        header = json.loads(line)
        stream.read(header.get("data_length", 0) + header.get("payload_length", 0))
        if header["type"] == until:
            return


def _wyoming(port: int, timeout_s: float = 2.0) -> RemoteWyomingRecognizer:
    return RemoteWyomingRecognizer(f"tcp://127.0.0.1:{port}", timeout_s=timeout_s)


def test_wyoming_answer_claiming_a_huge_length(fake: Callable[[Behaviour], Fake]) -> None:
    def lying(conn: socket.socket) -> None:
        _events(conn, "audio-stop")
        header = {"type": "transcript", "data_length": 1 << 40}
        conn.sendall(json.dumps(header).encode() + b"\n")
        time.sleep(3)

    server = fake(lying)
    assert "not a Wyoming server" in _fails_within(_wyoming(server.port), 3)


def test_wyoming_trickle_is_cut_off_at_the_deadline(fake: Callable[[Behaviour], Fake]) -> None:
    def trickling(conn: socket.socket) -> None:
        _events(conn, "audio-stop")
        for _ in range(20):
            conn.sendall(b" ")
            time.sleep(0.5)

    server = fake(trickling)
    assert "no answer within 2 s" in _fails_within(_wyoming(server.port), 3.5)


def test_wyoming_events_trickled_forever_are_cut_off(fake: Callable[[Behaviour], Fake]) -> None:
    def chatty(conn: socket.socket) -> None:
        _events(conn, "audio-stop")
        for _ in range(40):
            conn.sendall(b'{"type": "ping"}\n')
            time.sleep(0.25)

    server = fake(chatty)
    assert "no answer within 2 s" in _fails_within(_wyoming(server.port), 3.5)


def test_wyoming_non_protocol_bytes(fake: Callable[[Behaviour], Fake]) -> None:
    def http_server(conn: socket.socket) -> None:
        _events(conn, "audio-stop")
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    server = fake(http_server)
    assert "not a Wyoming server" in _fails_within(_wyoming(server.port), 3)


def test_wyoming_transcript_without_text(fake: Callable[[Behaviour], Fake]) -> None:
    def null_text(conn: socket.socket) -> None:
        _events(conn, "audio-stop")
        conn.sendall(b'{"type": "transcript", "data": {"text": null}}\n')

    server = fake(null_text)
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
    [b"SSH-2.0-OpenSSH_9.6\r\n", _answer(b'{"text": null}'), _answer(b'{"text": 5}')],
)
def test_odd_answer_falls_back_to_the_local_model(
    fake: Callable[[Behaviour], Fake], answer: bytes
) -> None:
    server = fake(lambda conn: (_request(conn), conn.sendall(answer)))
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
