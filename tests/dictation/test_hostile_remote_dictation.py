"""Whole dictations of the app's core (what the tray runs) with a remote engine whose
server misbehaves on loopback: every case ends `ready`, the local model types the text,
one warning line says why, and history records the delivery."""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from collections.abc import Callable

import pytest

from tests.support.audio import Clip
from tests.support.models import ensure_installed
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.remote import (
    API_KEY,
    Behaviour,
    RawServer,
    dictate,
    http_answer,
    read_events,
    read_request,
    remote_settings,
    transcribe_with_server,
)
from tests.support.serving import serve_home
from voxtray.choices import DictationState, RemoteProtocol
from voxtray.models.store import InstalledModel, ModelStore

pytestmark = [pytest.mark.faults, pytest.mark.hostile, pytest.mark.slow]


def _not_http(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")


def _text_null(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(http_answer(b'{"text": null}'))


def _trickle(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
    for _ in range(40):  # 1 byte every 0.25 s, 10 s at most
        conn.sendall(b"{")
        time.sleep(0.25)


def _wyoming_huge(conn: socket.socket) -> None:
    read_events(conn, "describe")
    conn.sendall(json.dumps({"type": "info", "data_length": 1 << 40}).encode() + b"\n")
    time.sleep(3)


CASES: dict[str, tuple[Behaviour | None, str, str]] = {
    "not http": (_not_http, "http://127.0.0.1:{port}", "not an HTTP answer"),
    "text null": (_text_null, "http://127.0.0.1:{port}", "not a transcription"),
    "trickle": (_trickle, "http://127.0.0.1:{port}", "no answer within 2 s"),
    "wyoming huge length": (_wyoming_huge, "tcp://127.0.0.1:{port}", "not a Wyoming server"),
    "port not a number": (None, "http://127.0.0.1:abc/", "port is not a number"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_odd_server_leaves_the_dictation_ready_on_the_local_model(
    tmp_path_factory: pytest.TempPathFactory,
    model_store: ModelStore,
    raw_server: Callable[[Behaviour], RawServer],
    case: str,
) -> None:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    behaviour, url, reason = CASES[case]
    port = raw_server(behaviour).port if behaviour is not None else 0
    tmp_path = tmp_path_factory.mktemp("remote-dictation")
    settings = remote_settings(url.format(port=port), 2.0)
    if url.startswith("tcp://"):
        settings = dataclasses.replace(settings, remote_protocol=RemoteProtocol.WYOMING)
    dictation, utterance, warnings, output = dictate(tmp_path, model_store, settings, API_KEY)
    try:
        assert dictation.state is DictationState.READY
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith("server failed, using the local model: ")
        assert reason in warnings[0]
        assert "\n" not in warnings[0]
        assert utterance is not None
        assert utterance.record.provider == "cpu"
        assert_heard(BIRCH, utterance.text, SENTENCE_WER)
        assert output.typed == [utterance.text + " "]
        entry = dictation.history.get(utterance.history_id)
        assert entry is not None
        assert entry.delivered
    finally:
        dictation.close()


def _trickle_slowly(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for index in range(30):  # a header line a second, 30 s at most
        conn.sendall(f"X-Slow-{index}: 1\r\n".encode())
        time.sleep(1.0)


@pytest.mark.parametrize(
    ("behaviour", "url", "reason"),
    [
        (_not_http, "http://127.0.0.1:{port}", "not an HTTP answer"),
        (_trickle_slowly, "http://127.0.0.1:{port}", "no answer within 3 s"),
        (None, "http://127.0.0.1:abc/", "port is not a number"),
        (_wyoming_huge, "tcp://127.0.0.1:{port}", "not a Wyoming server"),
    ],
)
def test_cli_falls_back_in_time_with_one_line(
    tmp_path_factory: pytest.TempPathFactory,
    model_store: ModelStore,
    tiny_en: InstalledModel,
    eval_clips: list[Clip],
    raw_server: Callable[[Behaviour], RawServer],
    behaviour: Behaviour | None,
    url: str,
    reason: str,
) -> None:
    ensure_installed(model_store, "silero-vad-v6")
    home = serve_home(tmp_path_factory.mktemp("cli-remote"), model_store)
    clip = next(c for c in eval_clips if 3.0 <= c.duration_s <= 6.0)
    port = raw_server(behaviour).port if behaviour is not None else 0
    began = time.monotonic()
    server = url.format(port=port)
    result, stderr = transcribe_with_server(
        home, clip, "--server", server, "--remote-timeout-s", "3"
    )
    assert time.monotonic() - began < 60
    assert reason in result["fallback"], result
    assert result["provider"] == "cpu"
    assert stderr.count("server failed") == 1
    assert "Traceback" not in stderr
