"""A real OpenAI-compatible chat-completions server on loopback, for clean-up tests: its
answers are deterministic (a careful clean-up by rules, or what a test tells it), and it
can refuse, hang, stream without end or redirect. Every request is recorded."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from voxtray.cleanup import CleanupOutcome

HESITATION = re.compile(r"\b(?:um+|uh+|er|erm|ah)\b,?\s*", re.IGNORECASE)
TRANSCRIPT = re.compile(r"<transcript>\s*(.*?)\s*</transcript>", re.DOTALL)
LONGEST_STALL_S = 30.0  # a hanging or endless answer stops by itself after this


def tidy(text: str) -> str:
    """What a good clean-up model does: hesitations out, capitals, a full stop."""
    text = " ".join(HESITATION.sub("", text).split())
    text = re.sub(r"\bi\b", "I", text)
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


@dataclass
class ChatRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def transcript(self) -> str:
        content = str(self.body["messages"][-1]["content"])
        found = TRANSCRIPT.search(content)
        return found.group(1) if found else content


@dataclass
class ChatServer:
    """`behaviour` is one of answer, events (the answer as server-sent events), status,
    hang, stream-forever, redirect (to `redirect_to`; paths under /moved/ are answered).
    `reply` makes the answer from the request."""

    host: str
    port: int = 0
    behaviour: str = "answer"
    reply: Callable[[ChatRequest], str] = lambda request: tidy(request.transcript)
    status: int = 500
    error_message: str = "the model crashed"
    redirect_to: str = ""
    delay_s: float = 0.0  # before an answer: a slow model
    models: list[str] = field(default_factory=lambda: ["tidy-1"])
    requests: list[ChatRequest] = field(default_factory=list)
    closing: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer
    protocol_version = "HTTP/1.1"

    @property
    def chat(self) -> ChatServer:
        chat: ChatServer = self.server.chat  # type: ignore[attr-defined]
        return chat

    def do_GET(self) -> None:
        self._record({})
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": name, "object": "model"} for name in self.chat.models]
            self._json(200, {"object": "list", "data": data})
        else:
            self._json(404, {"error": {"message": "no such path"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        request = self._record(json.loads(self.rfile.read(length) or b"{}"))
        behaviour = self.chat.behaviour
        if behaviour == "status":
            self._json(self.chat.status, {"error": {"message": self.chat.error_message}})
        elif behaviour == "hang":
            self.chat.closing.wait(LONGEST_STALL_S)
        elif behaviour == "redirect" and not self.path.startswith("/moved/"):
            self.send_response(307)
            self.send_header("Location", self.chat.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif behaviour == "stream-forever":
            self._stream_forever()
        elif behaviour == "events":
            self._events(self.chat.reply(request))
        else:
            self.chat.closing.wait(self.chat.delay_s)
            self._json(200, _completion(self.chat.reply(request), self.chat.models[0]))

    def _record(self, body: dict[str, Any]) -> ChatRequest:
        headers = {key.lower(): value for key, value in self.headers.items()}
        request = ChatRequest(self.command, self.path, headers, body)
        self.chat.requests.append(request)
        return request

    def _json(self, status: int, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _event_head(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _events(self, text: str) -> None:
        self._event_head()
        for word in text.split(" "):
            delta = {"choices": [{"delta": {"content": word + " "}}], "model": "tidy-1"}
            self._chunk(f"data: {json.dumps(delta)}\n\n".encode())
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _stream_forever(self) -> None:
        self._event_head()
        ends = time.monotonic() + LONGEST_STALL_S
        delta = json.dumps({"choices": [{"delta": {"content": "and "}}]})
        while time.monotonic() < ends and not self.chat.closing.is_set():
            try:
                self._chunk(f"data: {delta}\n\n".encode())
            except OSError:  # the client hung up at its deadline
                return
            time.sleep(0.05)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _completion(content: str, model: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {"object": "chat.completion", "model": model, "choices": [choice]}


class LateAnswers:
    """What `on_late` heard, waited for."""

    def __init__(self) -> None:
        self.outcomes: list[CleanupOutcome] = []
        self.arrived = threading.Event()

    def __call__(self, outcome: CleanupOutcome) -> None:
        self.outcomes.append(outcome)
        self.arrived.set()

    def wait(self, most_s: float = 20.0) -> CleanupOutcome:
        assert self.arrived.wait(most_s), "the late answer never came"
        return self.outcomes[0]


@contextlib.contextmanager
def running_chat_server(host: str = "127.0.0.1", **options: Any) -> Iterator[ChatServer]:
    """A chat server on `host` (a loopback address) until the block ends."""
    httpd = ThreadingHTTPServer((host, 0), _Handler)
    httpd.daemon_threads = True
    chat = ChatServer(host=host, port=httpd.server_address[1], **options)
    httpd.chat = chat  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield chat
    finally:
        chat.closing.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def chat_server() -> Iterator[Callable[..., ChatServer]]:
    """Starts chat servers (`chat_server(behaviour=..., host=...)`), stopped afterwards."""
    with contextlib.ExitStack() as running:

        def start(host: str = "127.0.0.1", **options: Any) -> ChatServer:
            return running.enter_context(running_chat_server(host, **options))

        yield start
