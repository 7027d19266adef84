"""Clients that upload to `voxtray serve` slowly, over real sockets on loopback, each from a
chosen loopback address (Linux answers on all of 127.0.0.0/8): a body trickled a byte at a
time, or a whole file sent at a set rate. Each answer is the server's status and error code."""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

BOUNDARY = "voxtray-slow-upload"
PATH = "/v1/audio/transcriptions"


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: the connection closed without an answer
    code: str  # the error code of an OpenAI-shaped error, "" otherwise
    text: str  # the transcript of a 200
    after_s: float
    retry_after: str = ""


def multipart(data: bytes, model: str) -> bytes:
    """A transcription request's body: the `model` field and `data` as the `file` field."""
    return (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n{model}\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
            f"Content-Type: audio/wav\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


def _open(url: str, token: str, length: int, source: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    assert parts.hostname
    assert parts.port
    conn = http.client.HTTPConnection(
        parts.hostname, parts.port, timeout=60, source_address=(source, 0)
    )
    conn.putrequest("POST", PATH)
    if token:
        conn.putheader("Authorization", f"Bearer {token}")
    conn.putheader("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")
    conn.putheader("Content-Length", str(length))
    conn.endheaders()
    return conn


def _answer(conn: http.client.HTTPConnection, began: float) -> Answer:
    try:
        response = conn.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException):
        return Answer(None, "", "", time.monotonic() - began)
    after = time.monotonic() - began
    retry = response.getheader("Retry-After") or ""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = {}
    if not isinstance(parsed, dict):
        parsed = {}
    error = parsed.get("error") or {}
    return Answer(response.status, error.get("code", ""), parsed.get("text", ""), after, retry)


def _answered(conn: http.client.HTTPConnection, wait_s: float) -> bool:
    assert conn.sock is not None
    readable, _, _ = select.select([conn.sock], [], [], wait_s)
    return bool(readable)


def trickle(
    url: str, token: str, stop: threading.Event, claimed: int = 1_000_000,
    source: str = "127.0.0.1", every_s: float = 1.0,
) -> Answer:  # fmt: skip
    """A POST claiming `claimed` bytes of body that sends one byte every `every_s`, until
    the server answers or `stop` is set."""
    began = time.monotonic()
    conn = _open(url, token, claimed, source)
    try:
        while not stop.is_set() and not _answered(conn, every_s):
            try:
                conn.send(b"-")
            except OSError:
                break
        if stop.is_set():
            return Answer(None, "", "", time.monotonic() - began)
        return _answer(conn, began)
    finally:
        conn.close()


def paced_upload(
    url: str, token: str, data: bytes, model: str, bytes_per_s: float, source: str = "127.0.0.1"
) -> Answer:
    """`data` uploaded as a transcription at about `bytes_per_s`, in 0.1 s steps."""
    body = multipart(data, model)
    step = max(1, int(bytes_per_s / 10))
    began = time.monotonic()
    conn = _open(url, token, len(body), source)
    try:
        for sent in range(0, len(body), step):
            try:
                conn.send(body[sent : sent + step])
            except OSError:
                break
            if _answered(conn, 0):
                break  # answered early: an error
            time.sleep(max(0.0, began + (sent + step) / bytes_per_s - time.monotonic()))
        return _answer(conn, began)
    finally:
        conn.close()


@contextlib.contextmanager
def trickling(
    url: str, token: str, count: int, source: str = "127.0.0.1"
) -> Iterator[list[Future[Answer]]]:
    """`count` trickled uploads from `source`, running while the block runs; the ones not
    answered by its end are stopped then."""
    stop = threading.Event()
    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(trickle, url, token, stop, source=source) for _ in range(count)]
        try:
            yield futures
        finally:
            stop.set()
