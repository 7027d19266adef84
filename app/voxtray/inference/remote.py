"""Remote engines: a transcription server chosen by URL, and the local model taking over
(with a one-line reason) when that server is unreachable, slow or refuses."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from voxtray.choices import RemoteProtocol
from voxtray.inference.recognizers.base import Recognizer, Transcript, device_of, fallback_of
from voxtray.text.languages import AUTO
from voxtray.text.vocabulary import parse_vocabulary

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
    vocabulary: tuple[str, ...] = ()  # sent as the OpenAI `prompt`; Wyoming has no field

    @property
    def resolved_protocol(self) -> RemoteProtocol:
        if self.protocol is not None:
            return self.protocol
        return RemoteProtocol.WYOMING if self.url.startswith("tcp://") else RemoteProtocol.OPENAI


def create_remote(spec: RemoteSpec) -> Recognizer:
    """The remote recogniser for `spec`; nothing is sent until `warmup()`/`transcribe()`."""
    from voxtray.inference.recognizers.remote_openai import RemoteOpenAIRecognizer
    from voxtray.inference.recognizers.remote_wyoming import RemoteWyomingRecognizer

    if spec.resolved_protocol is RemoteProtocol.WYOMING:
        return RemoteWyomingRecognizer(
            spec.url, model=spec.model, language=spec.language, timeout_s=spec.timeout_s
        )
    return RemoteOpenAIRecognizer(
        spec.url,
        model=spec.model or "whisper-1",
        api_key=spec.api_key,
        language=spec.language,
        timeout_s=spec.timeout_s,
        vocabulary=spec.vocabulary,
    )


class FallbackRecognizer:
    """The remote recogniser until it fails, then the local one (loaded on first need).

    `fallback` holds the one-line reason once it has happened; `on_fallback` hears it.
    With `retry_after_s`, the remote is tried again that long after a failure (a tray app
    runs for days; a server back after a restart should be used again); without it the
    local recogniser stays for good.
    """

    def __init__(
        self,
        remote: Recognizer,
        local: Callable[[], Recognizer],
        on_fallback: Callable[[str], None] | None = None,
        *,
        retry_after_s: float | None = None,
    ) -> None:
        self.remote = remote
        self._make_local = local
        self._local: Recognizer | None = None
        self._on_fallback = on_fallback
        self._retry_after_s = retry_after_s
        self._retry_at: float | None = None
        self.current: Recognizer = remote
        self.fallback: str | None = None
        self.engine = remote.engine
        self.model = remote.model

    @property
    def provider(self) -> str:
        return self.current.provider

    @property
    def device(self) -> str:
        """The server's device while the remote runs (where it says), else ""."""
        return device_of(self.current)

    def _fall_back(self, exc: Exception) -> None:
        self.fallback = _one_line(exc)
        if self._on_fallback is not None:
            self._on_fallback(self.fallback)
        if self._local is None:
            self._local = self._make_local()
            self._local.warmup()
        self.current = self._local
        self.engine, self.model = self.current.engine, self.current.model
        if self._retry_after_s is not None:
            self._retry_at = time.monotonic() + self._retry_after_s

    def _maybe_retry_remote(self) -> None:
        if self._retry_at is not None and time.monotonic() >= self._retry_at:
            self._retry_at = None
            self.current = self.remote
            self.engine = self.remote.engine

    # Whatever a remote server does, even what the client never foresaw, must end in the
    # local model and a reason, never in a dictation stuck half way.
    def warmup(self) -> None:
        if self.current is self.remote:
            try:
                self.remote.warmup()
                self.model = self.remote.model
            except Exception as exc:
                self._fall_back(exc)

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        self._maybe_retry_remote()
        if self.current is self.remote:
            try:
                transcript = self.remote.transcribe(audio)
                self.model = self.remote.model
                self.fallback = None
                return transcript
            except Exception as exc:
                self._fall_back(exc)
        return self.current.transcribe(audio)


def _one_line(exc: Exception) -> str:
    from voxtray.inference.recognizers.remote_http import RemoteError

    text = " ".join(str(exc).split())[:300]
    if isinstance(exc, RemoteError):
        return text
    name = exc.__class__.__name__
    return f"unexpected answer ({name}: {text})" if text else f"unexpected answer ({name})"


class RemoteSettings(Protocol):
    """The settings a remote engine reads (`voxtray.config.Settings` has them)."""

    @property
    def remote_url(self) -> str: ...

    @property
    def remote_protocol(self) -> RemoteProtocol: ...

    @property
    def remote_model(self) -> str: ...

    @property
    def remote_timeout_s(self) -> float: ...

    @property
    def language(self) -> str: ...

    @property
    def vocabulary(self) -> str: ...


def spec_from_settings(settings: RemoteSettings, api_key: str | None) -> RemoteSpec:
    return RemoteSpec(
        url=settings.remote_url,
        protocol=settings.remote_protocol,
        api_key=api_key or None,
        model=settings.remote_model or None,
        language=settings.language,
        timeout_s=settings.remote_timeout_s,
        vocabulary=parse_vocabulary(settings.vocabulary),
    )


def fallback_wrapper(
    spec: RemoteSpec,
    on_fallback: Callable[[str], None],
    *,
    retry_after_s: float | None = None,
) -> Callable[[Callable[[], Recognizer]], Recognizer]:
    """What `build_pipeline(remote=...)` takes: the remote engine over the local factory."""

    def wrap(local: Callable[[], Recognizer]) -> Recognizer:
        return FallbackRecognizer(
            create_remote(spec), local, on_fallback, retry_after_s=retry_after_s
        )

    return wrap


def remote_with_fallback(
    args: argparse.Namespace, local: Callable[[], Recognizer]
) -> FallbackRecognizer:
    """The recogniser for `--server`, falling back to `local()` with a line on stderr."""
    spec = RemoteSpec(
        url=args.server,
        protocol=RemoteProtocol.parse(args.remote_protocol) if args.remote_protocol else None,
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        model=args.remote_model,
        # A server detects the language when none is asked for.
        language="" if getattr(args, "language", "en") == AUTO else args.language,
        timeout_s=args.remote_timeout_s,
        vocabulary=tuple(getattr(args, "vocabulary", None) or ()),
    )

    def say(reason: str) -> None:
        print(f"voxtray: server failed, using the local model: {reason}", file=sys.stderr)

    return FallbackRecognizer(create_remote(spec), local, say)


def fallback_fields(recognizer: Recognizer) -> dict[str, str]:
    """`{"fallback": reason}` for JSON output when a remote engine fell back, else {}."""
    reason = fallback_of(recognizer)
    return {"fallback": reason} if reason is not None else {}
