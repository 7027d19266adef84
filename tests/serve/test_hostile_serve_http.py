"""The real `voxtray serve` (stand-in model) under idle, slow-header and crowding
connections on loopback: `/health` keeps answering and such connections are closed."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.support.hostile_serving import peak_rss_mb, start_stand_in
from tests.support.serving import Served

pytest.importorskip("uvicorn", reason="the serve extra is not installed")

pytestmark = [pytest.mark.faults, pytest.mark.hostile]

IDLE = 80


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("hostile-http")
    server = start_stand_in(
        home, "--no-auth", "--header-timeout-s", "1.5", "--max-client-connections", "8"
    )
    yield server
    server.stop()


def _port(served: Served) -> int:
    return int(served.url.rsplit(":", 1)[1])


def _idle(served: Served, stack: ExitStack, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", _port(served)), 5))
        sockets.append(sock)
    return sockets


def _closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed `sock` (reading whatever it sent), None if it did not."""
    began = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - began < seconds:
        try:
            if not sock.recv(4096):
                return time.monotonic() - began
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - began
    return None


def test_health_answers_while_80_connections_stay_idle(served: Served) -> None:
    with ExitStack() as stack:
        _idle(served, stack, IDLE)
        began = time.monotonic()
        reply = httpx.get(served.url + "/health", timeout=5)
        took = time.monotonic() - began
    assert reply.status_code == 200, reply.text
    assert reply.json()["status"] == "ok"
    assert took < 2.0
    assert peak_rss_mb(served.process) < 400


def test_connection_that_sends_nothing_is_closed(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", _port(served)), 5) as sock:
        took = _closed_within(sock, 8.0)
    assert took is not None, "an idle connection stayed open"
    assert took < 4.0


def test_request_head_trickled_a_byte_at_a_time_is_closed(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", _port(served)), 5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        began = time.monotonic()
        closed = False
        for _ in range(40):  # at most 40 bytes over 8 s
            try:
                sock.sendall(b"X")
            except OSError:
                closed = True
                break
            if _closed_within(sock, 0.2) is not None:
                closed = True
                break
        took = time.monotonic() - began
    assert closed, "a slow request head kept its connection"
    assert took < 5.0


def test_a_client_crowding_the_server_loses_its_oldest_idle_connection(served: Served) -> None:
    with ExitStack() as stack:
        first, *_rest = _idle(served, stack, 9)
        assert _closed_within(first, 1.0) is not None
        reply = httpx.get(served.url + "/health", timeout=5)
    assert reply.status_code == 200


def test_idle_connections_after_a_request_are_closed_too(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", _port(served)), 5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /health HTTP/1.1\r\n")  # then never the rest
        took = _closed_within(sock, 8.0)
    assert took is not None
    assert took < 4.0


def test_limits_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="limits must be positive"):
        start_stand_in(tmp_path, "--no-auth", "--header-timeout-s", "0")
