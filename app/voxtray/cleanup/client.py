"""Clean-up's client for an OpenAI-compatible chat-completions endpoint, on the standard
library as the remote engine's: one deadline for the whole exchange (connect, send,
headers, body, however long the server streams), redirects followed only within the
endpoint's origin, and the API key in no message (a server's own error text is cut to a
line, with the key taken out)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from voxtray.cleanup.endpoint import Endpoint
from voxtray.cleanup.outcome import Reason
from voxtray.cleanup.prompts import messages
from voxtray.inference.recognizers.remote_http import (
    Answer,
    Deadline,
    RemoteError,
    Target,
    TimedOutError,
    UnreachableError,
    send,
)

_THINKING = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


class CleanupError(Exception):
    """No usable answer: `reason` says which way it failed, the message (one line, no
    key) how."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Reply:
    text: str
    model: str
    round_trip_ms: float


@dataclass
class ChatClient:
    """Asks `endpoint` to clean up text. An empty `model` means the server's first model
    (`GET /models`, asked once); llama-server and LM Studio serve the one they loaded."""

    endpoint: Endpoint
    model: str = ""
    api_key: str = field(default="", repr=False)
    timeout_s: float = 30.0

    def complete(self, prompt: str, text: str, max_tokens: int) -> Reply:
        """The model's answer to one clean-up request, within `timeout_s` in all.

        Raises:
            CleanupError: unreachable, no answer in time, an error status, or no answer
                a chat endpoint gives.
        """
        began = time.perf_counter()
        with self._exchange() as deadline:
            model = self.model or self._first_model(deadline)
            body = {
                "model": model,
                "messages": messages(prompt, text),
                "temperature": 0,
                "max_tokens": max_tokens,
                "stream": False,
            }
            answer = self._send("POST", self.endpoint.chat, json.dumps(body).encode(), deadline)
        round_trip = 1000 * (time.perf_counter() - began)
        content, answered_by = self._content(answer)
        return Reply(content, answered_by or model, round_trip)

    def list_models(self) -> list[str]:
        """The models the server offers (for a settings page's list)."""
        with self._exchange() as deadline:
            return self._models(deadline)

    def _exchange(self) -> _Exchange:
        return _Exchange(self, Deadline(self.timeout_s, self.endpoint.shown))

    def _first_model(self, deadline: Deadline) -> str:
        models = self._models(deadline)
        if not models:
            raise CleanupError(Reason.SERVER_ERROR, f"{self.endpoint.shown} offers no model")
        self.model = models[0]
        return self.model

    def _models(self, deadline: Deadline) -> list[str]:
        answer = self._send("GET", self.endpoint.models, None, deadline)
        try:
            data = json.loads(answer.body)["data"]
            return [str(entry["id"]) for entry in data if isinstance(entry, dict) and "id" in entry]
        except (ValueError, KeyError, TypeError):
            raise CleanupError(Reason.NOT_AN_ANSWER, self._said("no list of models")) from None

    def _send(self, method: str, target: Target, body: bytes | None, deadline: Deadline) -> Answer:
        headers = {"Accept": "application/json", "User-Agent": "voxtray"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        answer = send(method, target, body, headers, deadline)
        if answer.status >= 300:
            raise CleanupError(Reason.SERVER_ERROR, self._refusal(answer))
        return answer

    def _content(self, answer: Answer) -> tuple[str, str]:
        kind = answer.headers.get("content-type", "")
        try:
            if "text/event-stream" in kind or answer.body.lstrip().startswith(b"data:"):
                content, model = _from_events(answer.body)
            else:
                content, model = _from_json(json.loads(answer.body))
        except (ValueError, KeyError, TypeError, IndexError):
            raise CleanupError(Reason.NOT_AN_ANSWER, self._said("no chat answer")) from None
        return _THINKING.sub("", content), model

    def _refusal(self, answer: Answer) -> str:
        if answer.status in (401, 403):
            return self._said(f"{answer.status}: the server refused the API key")
        return self._said(f"refused: {answer.status} {_server_reason(answer)}".rstrip())

    def _said(self, what: str) -> str:
        return self.scrub(f"{self.endpoint.shown}: {what}")

    def scrub(self, message: str) -> str:
        """`message` on one line, with the API key taken out wherever it appears."""
        line = " ".join(message.split())
        return line.replace(self.api_key, "***") if self.api_key else line


class _Exchange:
    """The deadline around one exchange; errors on the way out become `CleanupError`."""

    def __init__(self, client: ChatClient, deadline: Deadline) -> None:
        self.client = client
        self.deadline = deadline

    def __enter__(self) -> Deadline:
        return self.deadline.__enter__()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        self.deadline.__exit__(None, None, None)  # stops the timer
        if exc is None or isinstance(exc, CleanupError):
            return
        if self.deadline.expired or isinstance(exc, TimedOutError):
            raise CleanupError(Reason.NO_ANSWER, self.deadline.error().args[0]) from None
        if isinstance(exc, UnreachableError):
            raise CleanupError(Reason.UNREACHABLE, self.client.scrub(str(exc))) from None
        if isinstance(exc, RemoteError):
            raise CleanupError(Reason.SERVER_ERROR, self.client.scrub(str(exc))) from None


def _from_json(document: Any) -> tuple[str, str]:
    content = document["choices"][0]["message"]["content"]
    if not isinstance(content, str):
        raise TypeError("content is not text")
    model = document.get("model")
    return content, model if isinstance(model, str) else ""


def _from_events(body: bytes) -> tuple[str, str]:
    """A streamed answer (server-sent events), sent whole although not asked for."""
    parts: list[str] = []
    model = ""
    for line in body.decode("utf-8", "replace").splitlines():
        data = line.removeprefix("data:").strip()
        if not line.startswith("data:") or not data or data == "[DONE]":
            continue
        event = json.loads(data)
        delta = event["choices"][0].get("delta", {}).get("content") or ""
        if not isinstance(delta, str):
            raise TypeError("delta is not text")
        parts.append(delta)
        model = model or str(event.get("model") or "")
    if not parts:
        raise ValueError("no events")
    return "".join(parts), model


def _server_reason(answer: Answer) -> str:
    """The server's own reason where it sent OpenAI's error shape, else its first words."""
    try:
        body: Any = json.loads(answer.body[:65536] or b"{}")
        error = body["error"]
        message = error["message"] if isinstance(error, dict) else error
    except (ValueError, KeyError, TypeError):
        message = answer.body[:200].decode("utf-8", "replace")
    return " ".join(str(message).split())[:200]
