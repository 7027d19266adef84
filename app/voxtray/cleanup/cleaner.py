"""AI clean-up of dictated text within a time budget.

`Cleaner.clean(text)` returns within the budget, always with text to deliver: the
cleaned text once the guard accepted it, else the raw text and the reason. The request
goes on after the budget until its own deadline; an answer that arrives late is guarded
like any other and handed to `on_late`, for history, never for the window.

With clean-up off, `cleaner_for` returns None and the dictation does nothing more: no
object, thread, socket or timer exists for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from voxtray.cleanup.client import ChatClient, CleanupError
from voxtray.cleanup.consent import ConsentedHosts, Permission, check_endpoint
from voxtray.cleanup.endpoint import DEFAULT_ENDPOINT, parse_endpoint
from voxtray.cleanup.guard import GuardLimits, check
from voxtray.cleanup.outcome import CleanupOutcome, Reason, Timings
from voxtray.cleanup.prompts import resolve_prompt
from voxtray.cleanup.words import content_words
from voxtray.config import Settings

log = logging.getLogger(__name__)

LateHandler = Callable[[CleanupOutcome], None]
MAX_INPUT_CHARS = 20_000
DEFAULT_BUDGET_MS: int = Settings.cleanup_budget_ms
DEFAULT_TIMEOUT_S: float = Settings.cleanup_timeout_s


@dataclass(frozen=True)
class CleanupConfig:
    """What a `Cleaner` needs; `cleanup_config` builds it from the settings."""

    endpoint: str = DEFAULT_ENDPOINT
    model: str = ""
    api_key: str = field(default="", repr=False)
    prompt: str = ""  # a preset's name, empty for the default, or the user's own text
    budget_ms: int = DEFAULT_BUDGET_MS
    timeout_s: float = DEFAULT_TIMEOUT_S
    consented: ConsentedHosts = field(default_factory=ConsentedHosts)
    limits: GuardLimits = field(default_factory=GuardLimits)
    max_in_flight: int = 2  # requests past the budget that may still run; more is BUSY


class CleanupSettings(Protocol):
    """The settings clean-up reads (`voxtray.config.Settings` has them)."""

    @property
    def cleanup_enabled(self) -> bool: ...

    @property
    def cleanup_endpoint(self) -> str: ...

    @property
    def cleanup_model(self) -> str: ...

    @property
    def cleanup_prompt(self) -> str: ...

    @property
    def cleanup_budget_ms(self) -> int: ...

    @property
    def cleanup_timeout_s(self) -> float: ...

    @property
    def cleanup_consented_hosts(self) -> str: ...


def cleanup_config(settings: CleanupSettings, api_key: str) -> CleanupConfig:
    return CleanupConfig(
        endpoint=settings.cleanup_endpoint,
        model=settings.cleanup_model,
        api_key=api_key,
        prompt=settings.cleanup_prompt,
        budget_ms=settings.cleanup_budget_ms,
        timeout_s=settings.cleanup_timeout_s,
        consented=ConsentedHosts.parse(settings.cleanup_consented_hosts),
    )


def cleaner_for(settings: CleanupSettings, api_key: Callable[[], str]) -> Cleaner | None:
    """The dictation's cleaner, or None while clean-up is off (the key is not even read)."""
    if not settings.cleanup_enabled:
        return None
    return Cleaner(cleanup_config(settings, api_key()))


@dataclass
class _Request:
    """One clean-up between the caller, who waits up to the budget, and its thread."""

    raw: str
    began: float
    done: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    outcome: CleanupOutcome | None = None
    on_late: LateHandler | None = None
    given_up: bool = False


class Cleaner:
    """Cleans up the text of dictations; thread-safe, each request on a thread of its own."""

    def __init__(self, config: CleanupConfig) -> None:
        self.config = config
        self.prompt = resolve_prompt(config.prompt)
        self.permission: Permission = check_endpoint(config.endpoint, config.consented)
        self._client: ChatClient | None = None
        if self.permission.allowed:
            self._client = ChatClient(
                parse_endpoint(config.endpoint),
                model=config.model,
                api_key=config.api_key,
                timeout_s=config.timeout_s,
            )
        self._in_flight = 0
        self._lock = threading.Lock()

    def clean(
        self, text: str, on_late: LateHandler | None = None, *, budget_ms: int | None = None
    ) -> CleanupOutcome:
        """The text to deliver, within the budget (the config's, or `budget_ms`: a re-run
        from history may wait longer). Never raises."""
        budget = self.config.budget_ms if budget_ms is None else budget_ms
        began = time.perf_counter()
        refusal = self._refusal(text)
        if refusal is not None:
            return self._raw(text, began, *refusal)
        with self._lock:
            if self._in_flight >= self.config.max_in_flight:
                return self._raw(text, began, Reason.BUSY, "earlier clean-ups still wait")
            self._in_flight += 1
        request = _Request(text, began)
        try:
            threading.Thread(
                target=self._run, args=(request,), name="voxtray-cleanup", daemon=True
            ).start()
        except RuntimeError:  # no thread to be had: the process is at its limit
            with self._lock:
                self._in_flight -= 1
            return self._raw(text, began, Reason.BUSY, "no thread could be started")
        request.done.wait(budget / 1000)
        with request.lock:
            if request.outcome is not None:
                return replace(request.outcome, timings=_waited(request.outcome.timings, began))
            request.given_up, request.on_late = True, on_late
        return self._raw(text, began, Reason.LATE, f"no answer within {budget} ms")

    def _refusal(self, text: str) -> tuple[Reason, str] | None:
        if not self.permission.allowed:
            assert self.permission.reason is not None
            return self.permission.reason, self.permission.message
        if len(text) > MAX_INPUT_CHARS:
            return Reason.TOO_LONG_TO_SEND, f"longer than {MAX_INPUT_CHARS} characters"
        if not content_words(text):
            return Reason.NOTHING_TO_CLEAN, "no words to clean up"
        return None

    def _raw(self, text: str, began: float, reason: Reason, detail: str) -> CleanupOutcome:
        timings = Timings(cleanup_ms=1000 * (time.perf_counter() - began))
        return CleanupOutcome(
            text, None, False, reason, detail, timings, host=self.permission.host,
            model=self.config.model,
        )  # fmt: skip

    def _run(self, request: _Request) -> None:
        try:
            outcome = self._ask(request)
        except Exception as exc:  # whatever happens, the caller gets the raw text
            what = f"unexpected error ({type(exc).__name__})"
            log.warning("clean-up failed: %s", what)
            outcome = self._raw(request.raw, request.began, Reason.NOT_AN_ANSWER, what)
        finally:
            with self._lock:
                self._in_flight -= 1
        with request.lock:
            late, on_late = request.given_up, request.on_late
            request.outcome = outcome
            request.done.set()
        if late and on_late is not None:
            try:
                on_late(replace(outcome, late=True))
            except Exception:
                log.exception("clean-up: the handler of a late answer failed")

    def _ask(self, request: _Request) -> CleanupOutcome:
        assert self._client is not None
        raw = request.raw
        try:
            reply = self._client.complete(
                self.prompt, raw, max_tokens=self.config.limits.max_length(raw)
            )
        except CleanupError as exc:
            return self._raw(raw, request.began, exc.reason, str(exc))
        guard_began = time.perf_counter()
        verdict = check(raw, reply.text, self.prompt, self.config.limits)
        guard_ms = 1000 * (time.perf_counter() - guard_began)
        timings = Timings(
            cleanup_ms=1000 * (time.perf_counter() - request.began),
            round_trip_ms=reply.round_trip_ms,
            guard_ms=guard_ms,
        )
        return CleanupOutcome(
            raw, verdict.text, verdict.accepted, verdict.reason, verdict.detail, timings,
            host=self.permission.host, model=reply.model,
        )  # fmt: skip


def _waited(timings: Timings, began: float) -> Timings:
    return replace(timings, cleanup_ms=1000 * (time.perf_counter() - began))
