"""Clean-up against real HTTP servers on loopback: the accept path, consent, the budget and
late answers, and servers that hang, stream without end, return the prompt, fail, redirect
to another host or refuse the connection. Whatever happens, the raw text is delivered
whole and the API key is in no message."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.support.chat_server import ChatRequest, ChatServer, LateAnswers, tidy
from tests.support.serving import free_port
from voxtray.cleanup import (
    Cleaner,
    CleanupConfig,
    CleanupOutcome,
    ConsentedHosts,
    Reason,
    cleaner_for,
    resolve_prompt,
)

KEY = "sk-voxtray-test-0123456789abcdef"
RAW = "um so i think we should uh send the budget to twenty five people by friday"
StartChat = Callable[..., ChatServer]


def _cleaner(
    url: str, budget_ms: int = 5000, timeout_s: float = 10.0, **options: object
) -> Cleaner:
    config = CleanupConfig(
        endpoint=url, api_key=KEY, budget_ms=budget_ms, timeout_s=timeout_s, **options
    )  # type: ignore[arg-type]
    return Cleaner(config)


def _raw_delivered(outcome: CleanupOutcome, reason: Reason) -> None:
    assert outcome.reason is reason, outcome
    assert not outcome.accepted
    assert outcome.text == outcome.raw
    assert "\n" not in outcome.detail
    assert outcome.detail
    assert KEY not in outcome.detail
    assert KEY not in repr(outcome)


# --- the accept path ---


def test_a_good_answer_is_delivered_with_its_timings(chat_server: StartChat) -> None:
    server = chat_server()
    outcome = _cleaner(server.url).clean(RAW)
    assert outcome.accepted
    assert outcome.reason is Reason.ACCEPTED
    assert (
        outcome.text
        == tidy(RAW)
        == "So I think we should send the budget to twenty five people by friday."
    )
    assert outcome.model == "tidy-1"
    assert outcome.host == "127.0.0.1"
    assert not outcome.late
    timings = outcome.timings
    assert timings.round_trip_ms is not None
    assert timings.guard_ms is not None
    assert timings.cleanup_ms >= timings.round_trip_ms + timings.guard_ms
    assert set(timings.stages()) == {"cleanup", "cleanup_round_trip", "cleanup_guard"}


def test_the_request_is_a_chat_completion_with_the_key(chat_server: StartChat) -> None:
    server = chat_server(models=["first-model", "second-model"])
    _cleaner(server.url).clean(RAW)
    listing, chat = server.requests
    assert (listing.method, listing.path) == ("GET", "/v1/models")
    assert (chat.method, chat.path) == ("POST", "/v1/chat/completions")
    assert chat.headers["authorization"] == f"Bearer {KEY}"
    assert chat.body["model"] == "first-model"  # no model set: the server's first
    assert chat.body["temperature"] == 0
    assert chat.body["stream"] is False
    assert chat.body["messages"][0] == {"role": "system", "content": resolve_prompt("")}
    assert chat.transcript == RAW


def test_a_set_model_is_asked_for_without_listing(chat_server: StartChat) -> None:
    server = chat_server()
    assert _cleaner(server.url, model="llama3.2").clean(RAW).accepted
    assert [request.method for request in server.requests] == ["POST"]
    assert server.requests[0].body["model"] == "llama3.2"


def test_an_answer_streamed_unasked_is_read_whole(chat_server: StartChat) -> None:
    server = chat_server(behaviour="events")
    outcome = _cleaner(server.url).clean(RAW)
    assert outcome.accepted
    assert outcome.text == tidy(RAW)


def test_text_with_no_words_is_not_sent(chat_server: StartChat) -> None:
    server = chat_server()
    _raw_delivered(_cleaner(server.url).clean("um, uh... hmm"), Reason.NOTHING_TO_CLEAN)
    assert server.requests == []


# --- the guard on a real exchange ---


def _answering(reply: Callable[[ChatRequest], str]) -> dict[str, object]:
    return {"reply": reply}


def test_an_answer_that_returns_the_prompt_is_refused(chat_server: StartChat) -> None:
    long_raw = " ".join([RAW] * 12)  # long enough that the prompt is within the length bound
    server = chat_server(**_answering(lambda request: request.body["messages"][0]["content"]))
    _raw_delivered(_cleaner(server.url).clean(long_raw), Reason.PROMPT)


def test_an_answer_with_part_of_the_prompt_is_refused(chat_server: StartChat) -> None:
    def with_rule(request: ChatRequest) -> str:
        rule = "Reply with the cleaned text only, without quotes, tags, notes or explanations."
        return f"{tidy(request.transcript)} {rule}"

    long_raw = " ".join([RAW] * 12)  # the rule's 12 words are under a tenth of these
    outcome = _cleaner(chat_server(reply=with_rule).url).clean(long_raw)
    _raw_delivered(outcome, Reason.PROMPT)


def test_an_answer_that_talks_about_the_text_is_refused(chat_server: StartChat) -> None:
    server = chat_server(
        reply=lambda request: f"Sure! Here is the text: {tidy(request.transcript)}"
    )
    _raw_delivered(_cleaner(server.url).clean(RAW), Reason.ANSWERED)


def test_an_answer_that_drops_a_word_is_refused(chat_server: StartChat) -> None:
    server = chat_server(reply=lambda request: tidy(request.transcript.replace(" budget", "")))
    outcome = _cleaner(server.url).clean(RAW)
    _raw_delivered(outcome, Reason.WORDS_DROPPED)
    assert outcome.cleaned is not None
    assert "budget" not in outcome.cleaned


# --- servers that fail ---


def test_a_server_error_delivers_the_raw_text_with_its_reason(chat_server: StartChat) -> None:
    server = chat_server(behaviour="status", status=500, error_message="CUDA out of memory")
    outcome = _cleaner(server.url).clean(RAW)
    _raw_delivered(outcome, Reason.SERVER_ERROR)
    assert "500" in outcome.detail
    assert "CUDA out of memory" in outcome.detail


def test_a_key_echoed_by_the_server_is_not_repeated(chat_server: StartChat) -> None:
    server = chat_server(behaviour="status", status=400, error_message=f"bad key {KEY} for model")
    outcome = _cleaner(server.url).clean(RAW)
    _raw_delivered(outcome, Reason.SERVER_ERROR)
    assert "bad key *** for model" in outcome.detail


def test_a_refused_key_says_so(chat_server: StartChat) -> None:
    server = chat_server(behaviour="status", status=401, error_message=f"invalid key {KEY}")
    outcome = _cleaner(server.url).clean(RAW)
    _raw_delivered(outcome, Reason.SERVER_ERROR)
    assert "refused the API key" in outcome.detail


def test_a_refused_connection_is_unreachable() -> None:
    outcome = _cleaner(f"http://127.0.0.1:{free_port()}/v1").clean(RAW)
    _raw_delivered(outcome, Reason.UNREACHABLE)


def test_a_redirect_to_another_host_is_not_followed(chat_server: StartChat) -> None:
    elsewhere = chat_server(host="127.0.0.2")
    server = chat_server(
        behaviour="redirect",
        redirect_to=f"http://127.0.0.2:{elsewhere.port}/moved/v1/chat/completions",
    )
    outcome = _cleaner(server.url, model="m").clean(RAW)
    _raw_delivered(outcome, Reason.SERVER_ERROR)
    assert "not followed" in outcome.detail
    assert "127.0.0.2" in outcome.detail
    time.sleep(0.3)
    assert elsewhere.requests == []  # neither the text nor the key went there


def test_a_redirect_within_the_server_is_followed_with_the_key(chat_server: StartChat) -> None:
    server = chat_server(behaviour="redirect")
    server.redirect_to = f"http://127.0.0.1:{server.port}/moved/v1/chat/completions"
    outcome = _cleaner(server.url, model="m").clean(RAW)
    assert outcome.accepted
    assert outcome.text == tidy(RAW)
    assert [request.path for request in server.requests] == [
        "/v1/chat/completions",
        "/moved/v1/chat/completions",
    ]
    assert all(request.headers["authorization"] == f"Bearer {KEY}" for request in server.requests)


# --- the budget: hanging, endless and slow servers ---


@pytest.mark.parametrize("behaviour", ["hang", "stream-forever"])
def test_a_server_that_never_finishes_costs_the_budget_then_the_deadline(
    chat_server: StartChat, behaviour: str
) -> None:
    server = chat_server(behaviour=behaviour)
    late = LateAnswers()
    began = time.monotonic()
    outcome = _cleaner(server.url, budget_ms=300, timeout_s=2.0, model="m").clean(RAW, late)
    assert time.monotonic() - began < 2.0  # the budget, not the deadline
    _raw_delivered(outcome, Reason.LATE)
    assert outcome.timings.round_trip_ms is None
    cut = late.wait()
    assert time.monotonic() - began < 12.0  # cut at the 2 s deadline, not the 30 s stream
    assert cut.late
    assert cut.reason is Reason.NO_ANSWER
    assert not cut.accepted
    assert "no answer within 2 s" in cut.detail
    assert cut.text == RAW


def test_a_late_answer_is_kept_for_history_not_typed(chat_server: StartChat) -> None:
    server = chat_server(delay_s=1.5)
    late = LateAnswers()
    outcome = _cleaner(server.url, budget_ms=200, model="m").clean(RAW, late)
    _raw_delivered(outcome, Reason.LATE)
    kept = late.wait()
    assert kept.late
    assert kept.accepted
    assert kept.cleaned == tidy(RAW)
    assert kept.timings.round_trip_ms is not None
    assert kept.timings.round_trip_ms >= 1500


def test_a_rerun_may_wait_longer_than_a_dictation(chat_server: StartChat) -> None:
    server = chat_server(delay_s=1.0)
    cleaner = _cleaner(server.url, budget_ms=200, model="m")
    outcome = cleaner.clean(RAW, budget_ms=20_000)
    assert outcome.accepted
    assert outcome.text == tidy(RAW)


def test_requests_past_the_budget_are_limited(chat_server: StartChat) -> None:
    server = chat_server(behaviour="hang")
    cleaner = _cleaner(server.url, budget_ms=100, timeout_s=3.0, model="m", max_in_flight=1)
    _raw_delivered(cleaner.clean(RAW), Reason.LATE)
    _raw_delivered(cleaner.clean(RAW), Reason.BUSY)
    assert len(server.requests) == 1


# --- consent and the switch ---


def test_a_host_without_consent_gets_nothing(chat_server: StartChat) -> None:
    # 0.0.0.0 is not a loopback name, so it needs consent (on Linux it reaches this
    # computer, so the test sends nothing anywhere else).
    server = chat_server()
    url = f"http://0.0.0.0:{server.port}/v1"
    outcome = _cleaner(url).clean(RAW)
    _raw_delivered(outcome, Reason.NO_CONSENT)
    assert "0.0.0.0" in outcome.detail
    assert server.requests == []
    allowed = _cleaner(url, consented=ConsentedHosts.parse("0.0.0.0")).clean(RAW)
    assert allowed.accepted
    assert len(server.requests) == 2


@dataclass(frozen=True)
class _Settings:
    cleanup_enabled: bool
    cleanup_endpoint: str = "http://127.0.0.1:9/v1"
    cleanup_model: str = ""
    cleanup_prompt: str = ""
    cleanup_budget_ms: int = 2000
    cleanup_timeout_s: float = 30.0
    cleanup_consented_hosts: str = ""


def test_off_means_no_cleaner_and_the_key_unread() -> None:
    def key() -> str:
        raise AssertionError("the key was read with clean-up off")

    assert cleaner_for(_Settings(cleanup_enabled=False), key) is None
    assert cleaner_for(_Settings(cleanup_enabled=True), lambda: KEY) is not None


def test_the_key_is_in_no_log_or_repr(
    chat_server: StartChat, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = chat_server(behaviour="status", status=500, error_message=KEY)
    cleaner = _cleaner(server.url)
    outcomes = [cleaner.clean(RAW), _cleaner(f"http://127.0.0.1:{free_port()}/v1").clean(RAW)]
    assert KEY not in caplog.text
    assert KEY not in repr(cleaner.config)
    assert KEY not in repr(outcomes)
