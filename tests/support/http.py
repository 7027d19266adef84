"""A real HTTP server on 127.0.0.1 for download tests: Range support, cut-offs, redirects."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Request:
    path: str
    range: str | None
    user_agent: str | None
    accept: str | None


@dataclass
class FakeServer:
    """Serves `routes` on 127.0.0.1 and records every request."""

    routes: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    cut_after: int | None = None  # the next response stops after this many body bytes
    ignore_range: bool = False
    redirects: dict[str, str] = field(default_factory=dict)
    throttle_s: float = 0.0  # pause after every 64 KiB of a body (a slow server)
    etags: bool = True  # send an ETag (and honour If-Range)
    ignore_if_range: bool = False  # answer a Range even when If-Range names another version
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, body: bytes, content_type: str = "application/octet-stream") -> str:
        self.routes[path] = (body, content_type)
        return self.url(path)


class Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    @property
    def fake(self) -> FakeServer:
        fake: FakeServer = self.server.fake  # type: ignore[attr-defined]
        return fake

    def do_GET(self) -> None:
        fake = self.fake
        fake.requests.append(
            Request(
                self.path,
                self.headers.get("Range"),
                self.headers.get("User-Agent"),
                self.headers.get("Accept"),
            )
        )
        if self.path in fake.redirects:
            self.send_response(302)
            self.send_header("Location", fake.redirects[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path not in fake.routes:
            self.send_error(404)
            return
        body, content_type = fake.routes[self.path]
        etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
        start = self._range_start()
        if_range = None if fake.ignore_if_range else self.headers.get("If-Range")
        if start is not None and if_range not in (None, etag):
            start = None  # the file changed since the client's first attempt: all of it
        if start is not None and start >= len(body):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(body)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if start is not None:
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
            start = 0
        self.send_header("Content-Type", content_type)
        if fake.etags:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        self._send_body(body[start:])

    def _range_start(self) -> int | None:
        header = self.headers.get("Range")
        if header is None or self.fake.ignore_range:
            return None
        assert header.startswith("bytes=")
        assert header.endswith("-")
        return int(header[len("bytes=") : -1])

    def _send_body(self, body: bytes) -> None:
        cut, self.fake.cut_after = self.fake.cut_after, None
        if cut is None and self.fake.throttle_s:
            for start in range(0, len(body), 1 << 16):
                try:
                    self.wfile.write(body[start : start + (1 << 16)])
                    self.wfile.flush()
                except OSError:  # the client hung up (a cancelled download)
                    return
                time.sleep(self.fake.throttle_s)
            return
        if cut is None:
            self.wfile.write(body)
            return
        # Announce the whole length, send part of it, then hang up.
        self.wfile.write(body[:cut])
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep pytest output clean


@pytest.fixture
def server() -> Iterator[FakeServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake = FakeServer(port=httpd.server_address[1])
    httpd.fake = fake  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
