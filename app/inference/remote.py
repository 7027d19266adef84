"""Remote engines: a transcription server chosen by URL, and the local model taking over
(with a one-line reason) when that server is unreachable, slow or refuses."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from app.choices import RemoteProtocol
from app.inference.recognizers.base import Recognizer, Transcript

if TYPE_CHECKING:
    from app.inference.recognizers.remote_openai import RemoteError

API_KEY_ENV = "VOXTRAY_API_KEY"


@dataclass(frozen=True)
class RemoteSpec:
    """Which server, how to talk to it, and how long to wait."""

    url: str
    protocol: RemoteProtocol | None = None  # None: tcp:// means Wyoming, anything else OpenAI
    api_key: str | None = None
    model: str | None = None
    language: str = "en"
    timeout_s: float = 30.0

    @property
    def resolved_protocol(self) -> RemoteProtocol:
        if self.protocol is not None:
            return self.protocol
        return RemoteProtocol.WYOMING if self.url.startswith("tcp://") else RemoteProtocol.OPENAI


def create_remote(spec: RemoteSpec) -> Recognizer:
    """The remote recogniser for `spec`; nothing is sent until `warmup()`/`transcribe()`."""
    # Imported here: the tray builds the command-line parser (add_remote_flags) and must
    # not load ssl, http and email for a server it is not using.
    from app.inference.recognizers.remote_openai import RemoteOpenAIRecognizer
    from app.inference.recognizers.remote_wyoming import RemoteWyomingRecognizer

    if spec.resolved_protocol is RemoteProtocol.WYOMING:
        return RemoteWyomingRecognizer(
            spec.url, model=spec.model, language=spec.language, timeout_s=spec.timeout_s
        )
    return RemoteOpenAIRecognizer(
        spec.url, model=spec.model or "whisper-1", api_key=spec.api_key,
        language=spec.language, timeout_s=spec.timeout_s,
    )


class FallbackRecognizer:
    """The remote recogniser until its first failure, then the local one for good.

    `fallback` holds the one-line reason once it has happened; `on_fallback` hears it.
    """

    def __init__(
        self,
        remote: Recognizer,
        local: Callable[[], Recognizer],
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        self.remote = remote
        self._make_local = local
        self._on_fallback = on_fallback
        self.current: Recognizer = remote
        self.fallback: str | None = None
        self.engine = remote.engine
        self.model = remote.model

    @property
    def provider(self) -> str:
        return self.current.provider

    def _fall_back(self, exc: RemoteError) -> None:
        self.fallback = str(exc)
        if self._on_fallback is not None:
            self._on_fallback(self.fallback)
        self.current = self._make_local()
        self.current.warmup()
        self.engine, self.model = self.current.engine, self.current.model

    def warmup(self) -> None:
        from app.inference.recognizers.remote_openai import RemoteError

        if self.current is self.remote:
            try:
                self.remote.warmup()
                self.model = self.remote.model
            except RemoteError as exc:
                self._fall_back(exc)

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        from app.inference.recognizers.remote_openai import RemoteError

        if self.current is self.remote:
            try:
                transcript = self.remote.transcribe(audio)
                self.model = self.remote.model
                return transcript
            except RemoteError as exc:
                self._fall_back(exc)
        return self.current.transcribe(audio)


def add_remote_flags(parser: argparse.ArgumentParser) -> None:
    """`--server URL [--api-key KEY] [--remote-model NAME] [--remote-protocol ...]`."""
    parser.add_argument(
        "--server", default=None, metavar="URL",
        help="transcribe on this server (http(s)://HOST:PORT for the OpenAI API, "
        "tcp://HOST:PORT for Wyoming); the local model takes over if it fails",
    )
    parser.add_argument("--api-key", default=None,
                        help=f"the server's API key (default: ${API_KEY_ENV})")
    parser.add_argument("--remote-model", default=None, help="model name to ask the server for")
    parser.add_argument("--remote-protocol", default=None, choices=RemoteProtocol.values())
    parser.add_argument("--remote-timeout-s", type=float, default=30.0,
                        help="longest wait for the server per request")


def remote_with_fallback(
    args: argparse.Namespace, local: Callable[[], Recognizer]
) -> FallbackRecognizer:
    """The recogniser for `--server`, falling back to `local()` with a line on stderr."""
    spec = RemoteSpec(
        url=args.server,
        protocol=RemoteProtocol.parse(args.remote_protocol) if args.remote_protocol else None,
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        model=args.remote_model,
        language=getattr(args, "language", "en"),
        timeout_s=args.remote_timeout_s,
    )

    def say(reason: str) -> None:
        print(f"voxtray: server failed, using the local model: {reason}", file=sys.stderr)

    return FallbackRecognizer(create_remote(spec), local, say)


def fallback_fields(recognizer: object) -> dict[str, str]:
    """`{"fallback": reason}` for JSON output when a remote engine fell back, else {}."""
    reason = getattr(recognizer, "fallback", None)
    return {"fallback": reason} if isinstance(reason, str) else {}
