"""The figures in docs/serve.md ("Limits under attack"): `/health` latency under idle
connections and the server's peak memory under each bounded attack, on loopback, with
the stand-in model (`python -m tools.measure.serve_attacks [ATTACK...]`)."""

from __future__ import annotations

import contextlib
import io
import json
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import httpx
import numpy as np
import soundfile

from tests.support.audio import clip_path
from tests.support.hostile_serving import MODEL, peak_rss_mb, rss_mb, start_stand_in
from tests.support.serving import Served
from tests.support.slow_upload import trickling

FORMAT = {"rate": 16000, "width": 2, "channels": 1}


def _event(kind: str, data: dict[str, int], payload: bytes = b"") -> bytes:
    body = json.dumps(data).encode()
    header = {"type": kind, "data_length": len(body), "payload_length": len(payload)}
    return json.dumps(header).encode() + b"\n" + body + payload


def _port(served: Served) -> int:
    return int(served.url.rsplit(":", 1)[1])


def idle_health(served: Served) -> str:
    with ExitStack() as stack:
        for _ in range(80):
            stack.enter_context(socket.create_connection(("127.0.0.1", _port(served)), 5))
        times, codes = [], []
        for _ in range(20):
            began = time.monotonic()
            codes.append(httpx.get(served.url + "/health", timeout=10).status_code)
            times.append(1000 * (time.monotonic() - began))
    return f"/health x20 under 80 idle: {set(codes)}, median {statistics.median(times):.1f} ms"


def wyoming_gigabyte(served: Served) -> str:
    with socket.create_connection(("127.0.0.1", served.wyoming_port), 5) as sock:
        header = {"type": "audio-chunk", "data": FORMAT, "payload_length": 1 << 30}
        sock.sendall(json.dumps(header).encode() + b"\n")
        try:
            for _ in range(256):
                sock.sendall(bytes(1 << 20))
        except OSError:
            pass
    return "audio-chunk declaring 1 GiB, 256 MiB sent"


def wyoming_one_hertz(served: Served) -> str:
    with socket.create_connection(("127.0.0.1", served.wyoming_port), 5) as sock:
        sock.sendall(_event("audio-chunk", {**FORMAT, "rate": 1}, bytes(60_000)))
        with contextlib.suppress(TimeoutError):
            sock.recv(4096)
    return "60 kB audio-chunk at 1 Hz"


def wyoming_streams(served: Served) -> str:
    with ExitStack() as stack:
        for _ in range(40):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", served.wyoming_port)))
            try:
                sock.sendall(_event("audio-start", FORMAT))
                for _ in range(590):
                    sock.sendall(_event("audio-chunk", FORMAT, bytes(32000)))
            except OSError:
                continue
        httpx.get(served.url + "/health", timeout=10)
    time.sleep(1)
    return (
        f"40 streams of 590 s without audio-stop (RSS after close {rss_mb(served.process):.0f} MB)"
    )


def _flac(seconds: float, rate: int) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, np.zeros(int(seconds * rate), dtype=np.int16), rate, format="FLAC")
    return buffer.getvalue()


def flac_384k(served: Served) -> str:
    upload = _flac(60, 384_000)
    reply = httpx.post(
        served.base_url + "/audio/transcriptions",
        files={"file": ("a.flac", upload, "audio/flac")},
        data={"model": MODEL},
        timeout=60,
    )
    return f"{len(upload) / 1e6:.1f} MB FLAC of 60 s at 384 kHz: {reply.status_code}"


def slow_uploads(served: Served) -> str:
    """Ten bodies trickled a byte a second from 127.0.0.1, and meanwhile twenty uploads
    of a 3 s clip from 127.0.0.2, a quarter of a second apart."""
    data = clip_path("harvard_sb_example1").read_bytes()
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    codes, times = [], []
    with trickling(served.url, "", 10), httpx.Client(transport=transport, timeout=60) as client:
        time.sleep(1)
        for _ in range(20):
            began = time.monotonic()
            reply = client.post(
                served.base_url + "/audio/transcriptions",
                files={"file": ("a.wav", data, "audio/wav")},
                data={"model": MODEL},
            )
            times.append(1000 * (time.monotonic() - began))
            codes.append(reply.status_code)
            time.sleep(0.25)
    counts = ", ".join(f"{codes.count(code)} x {code}" for code in sorted(set(codes)))
    return f"10 uploads at 1 byte/s, 20 others: {counts}, median {statistics.median(times):.1f} ms"


ATTACKS: list[Callable[[Served], str]] = [
    idle_health,
    slow_uploads,
    wyoming_gigabyte,
    wyoming_one_hertz,
    wyoming_streams,
    flac_384k,
]


def main() -> None:
    wanted = set(sys.argv[1:])
    for attack in ATTACKS:
        if wanted and attack.__name__ not in wanted:
            continue
        with tempfile.TemporaryDirectory() as home:
            served = start_stand_in(Path(home), "--no-auth", "--wyoming-port", "0")
            try:
                before = rss_mb(served.process)
                began = time.monotonic()
                what = attack(served)
                took = time.monotonic() - began
                peak = peak_rss_mb(served.process)
                print(f"{what}: {took:.1f} s; RSS {before:.0f} MB at rest, peak {peak:.0f} MB")
            finally:
                served.stop()


if __name__ == "__main__":
    main()
