"""AI clean-up inside a whole dictation: a fake sound device replaying a real clip, the real
model, pipeline and history, and real chat servers on loopback (a deterministic one, and
llama.cpp's serving a tiny random-weight model the test writes). What reaches the output is
what a user would see typed; history keeps the raw text, the answer and the outcome."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.chat_server import ChatRequest, ChatServer, tidy
from tests.support.dictation_rig import MakeRig
from tests.support.llama import llama_server_missing, serving_llama, write_tiny_model
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from voxtray.config import Settings
from voxtray.dictation.utterance import Utterance
from voxtray.history.store import Entry, History

StartChat = Callable[..., ChatServer]


def exclaim(request: ChatRequest) -> str:
    """A clean-up the guard accepts and a test can tell from the raw text."""
    return tidy(request.transcript).replace(".", "!")


@pytest.fixture
def dictate(tmp_path: Path, dictation_rig: MakeRig) -> Callable[[Settings], Utterance]:
    """Dictates the clip once with ``settings``; the output and the history stay readable."""
    count = itertools.count()

    def run(settings: Settings) -> Utterance:
        history = tmp_path / f"history-{next(count)}.sqlite3"
        rig = dictation_rig(history=history, settings=settings)
        utterance = rig.say()
        utterance.typed = rig.output.typed  # type: ignore[attr-defined]
        return utterance

    return run


def _asked(server: ChatServer) -> ChatRequest:
    """The chat request (a model left empty is looked up first, with a GET)."""
    return next(request for request in server.requests if request.method == "POST")


def _entry(utterance: Utterance, history: History) -> Entry:
    assert utterance.history_id is not None
    entry = history.get(utterance.history_id)
    assert entry is not None
    return entry


def _on(server_url: str, **more: object) -> Settings:
    return Settings(cleanup_enabled=True, cleanup_endpoint=server_url, **more)  # type: ignore[arg-type]


def test_an_accepted_clean_up_is_what_is_typed_and_history_keeps_both(
    dictate: Callable[[Settings], Utterance], chat_server: StartChat, rig: Path
) -> None:
    server = chat_server(reply=exclaim)
    utterance = dictate(_on(server.url, cleanup_model="tidy-1"))
    raw = _asked(server).transcript
    assert_heard(BIRCH, raw, SENTENCE_WER)
    assert utterance.text == exclaim(_asked(server))
    assert utterance.typed == [utterance.text + " "]  # type: ignore[attr-defined]
    assert utterance.cleanup is None  # taken: nothing to tell
    assert utterance.timings_ms["cleanup"] > 0
    assert "cleanup_round_trip" in utterance.timings_ms
    with History(rig / "history-0.sqlite3") as history:
        entry = _entry(utterance, history)
    assert (entry.text, entry.raw_text, entry.cleaned_text) == (utterance.text, raw, utterance.text)
    assert entry.cleanup is not None
    assert entry.cleanup.startswith("accepted: cleaned up in")
    assert entry.delivered


def test_off_sends_nothing(
    dictate: Callable[[Settings], Utterance], chat_server: StartChat, rig: Path
) -> None:
    server = chat_server(reply=exclaim)
    utterance = dictate(Settings(cleanup_endpoint=server.url))
    assert server.requests == []
    assert "cleanup" not in utterance.timings_ms
    assert_heard(BIRCH, utterance.text, SENTENCE_WER)
    with History(rig / "history-0.sqlite3") as history:
        entry = _entry(utterance, history)
    assert (entry.raw_text, entry.cleaned_text, entry.cleanup) == (None, None, None)


def test_another_host_without_consent_gets_nothing_and_the_text_is_typed(
    dictate: Callable[[Settings], Utterance], rig: Path
) -> None:
    """A LAN address nobody allowed: nothing is sent (no connection is even tried), the raw
    text is typed, and the line names the host."""
    utterance = dictate(_on("http://10.255.255.1:11434/v1"))
    assert_heard(BIRCH, utterance.text, SENTENCE_WER)
    assert utterance.typed == [utterance.text + " "]  # type: ignore[attr-defined]
    assert utterance.cleanup is not None
    assert "10.255.255.1" in utterance.cleanup
    assert utterance.timings_ms["cleanup"] < 100
    with History(rig / "history-0.sqlite3") as history:
        entry = _entry(utterance, history)
    assert entry.cleanup is not None
    assert entry.cleanup.startswith("no-consent")
    assert entry.raw_text == entry.text


def test_a_late_answer_is_kept_in_history_not_typed(
    dictate: Callable[[Settings], Utterance], chat_server: StartChat, rig: Path
) -> None:
    server = chat_server(reply=exclaim, delay_s=1.5)
    utterance = dictate(_on(server.url, cleanup_budget_ms=200))
    raw = _asked(server).transcript
    assert utterance.text == raw  # typed as recognised, at the budget
    assert utterance.typed == [raw + " "]  # type: ignore[attr-defined]
    assert utterance.cleanup is not None
    assert "200 ms" in utterance.cleanup
    assert 200 <= utterance.timings_ms["cleanup"] < 1500
    deadline = time.monotonic() + 20
    with History(rig / "history-0.sqlite3") as history:
        entry = _entry(utterance, history)
        while "(late)" not in (entry.cleanup or "") and time.monotonic() < deadline:
            time.sleep(0.1)
            entry = _entry(utterance, history)
    assert entry.text == raw
    assert entry.cleaned_text == exclaim(_asked(server))
    assert entry.cleanup is not None
    assert entry.cleanup.startswith("accepted (late)")


def test_nonsense_from_a_real_llama_server_is_refused_and_nothing_is_lost(
    dictate: Callable[[Settings], Utterance], rig: Path, tmp_path: Path
) -> None:
    missing = llama_server_missing()
    if missing is not None:
        pytest.skip(missing)
    model = write_tiny_model(tmp_path / "tiny-random.gguf")
    with serving_llama(model, tmp_path / "server.log") as llama:
        utterance = dictate(_on(llama.url, cleanup_budget_ms=30_000, cleanup_timeout_s=60.0))
    assert_heard(BIRCH, utterance.text, SENTENCE_WER)
    assert utterance.typed == [utterance.text + " "]  # type: ignore[attr-defined]
    assert utterance.cleanup is not None
    assert utterance.cleanup.startswith("clean-up: raw text:")
    with History(rig / "history-0.sqlite3") as history:
        entry = _entry(utterance, history)
    assert entry.text == entry.raw_text == utterance.text
    assert entry.cleanup is not None
    reason = entry.cleanup.partition(":")[0]
    assert reason in {"empty", "too-long", "answered", "prompt", "words-dropped", "words-added"}
