"""Test connection: where a transcription server says it runs (provider, device, model),
from Voxtray's `GET /health`, an OpenAI server's `GET /v1/models` or Wyoming's describe."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass

from voxtray.errors import VoxtrayError
from voxtray.inference.recognizers.remote_openai import api_base


@dataclass(frozen=True)
class ServerReport:
    """What the server said; `problem` is set, in plain words, when it could not be asked."""

    provider: str = ""
    device: str = ""
    model: str = ""
    problem: str = ""

    def summary(self) -> str:
        if self.problem:
            return self.problem
        where = self.provider or "an unknown processor"
        if self.device:
            where += f" ({self.device})"
        return f"Connected: {self.model or 'the default model'} on {where}."


def probe_server(url: str, api_key: str = "", timeout_s: float = 5.0) -> ServerReport:
    """Ask the server at `url` what it runs; never raises."""
    if not url:
        return ServerReport(problem="Enter the server's address first.")
    if url.startswith("tcp://"):
        return _probe_wyoming(url, timeout_s)
    root = api_base(url).removesuffix("/v1")
    try:
        health = _get_json(root + "/health", "", timeout_s)
    except urllib.error.HTTPError:
        health = None  # not a Voxtray server: ask the OpenAI API instead
    except (OSError, ValueError) as exc:
        return ServerReport(problem=_unreachable(url, exc))
    if isinstance(health, dict) and "provider" in health:
        return ServerReport(
            str(health.get("provider", "")),
            str(health.get("device", "")),
            str(health.get("model", "")),
        )
    try:
        models = _get_json(api_base(url) + "/models", api_key, timeout_s)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return ServerReport(problem="The server refused the API key.")
        return ServerReport(problem=f"The server answered with error {exc.code}.")
    except (OSError, ValueError) as exc:
        return ServerReport(problem=_unreachable(url, exc))
    data = models.get("data") if isinstance(models, dict) else None
    first = data[0].get("id", "") if isinstance(data, list) and data else ""
    return ServerReport(provider="not reported by this server", model=str(first))


def _get_json(url: str, api_key: str, timeout_s: float) -> object:
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout_s) as reply:
        return json.loads(reply.read(1 << 20))


def _probe_wyoming(url: str, timeout_s: float) -> ServerReport:
    from voxtray.inference.recognizers.remote_wyoming import RemoteWyomingRecognizer

    try:
        info = RemoteWyomingRecognizer(url, timeout_s=timeout_s).describe()
    except (VoxtrayError, OSError, ValueError) as exc:
        return ServerReport(problem=_unreachable(url, exc))
    programs = info.get("asr") or []
    models = [m for p in programs if isinstance(p, dict) for m in p.get("models", [])]
    if not models or not isinstance(models[0], dict):
        return ServerReport(problem="The server offers no speech-to-text model.")
    # Voxtray describes its model as "MODEL (ENGINE, PRECISION) on PROVIDER".
    description = str(models[0].get("description", ""))
    provider = description.rpartition(" on ")[2] if " on " in description else ""
    return ServerReport(provider=provider, model=str(models[0].get("name", "")))


def _unreachable(url: str, exc: BaseException) -> str:
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, TimeoutError | socket.timeout):
        return f"No answer from {url}: the server may be down or busy."
    if isinstance(reason, socket.gaierror):
        return f"Cannot find the server {url}: check the address and the network."
    if isinstance(reason, ConnectionRefusedError):
        return f"Nothing is listening at {url}: is the server started, on that port?"
    if isinstance(exc, ValueError):
        return f"{url} answered, but not as a transcription server does."
    return f"Cannot reach {url}: check the address and the network."
