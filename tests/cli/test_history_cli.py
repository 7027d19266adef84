"""`voxtray history` as a user runs it: a real process on a VOXTRAY_HOME with a history."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support.database import database_locked
from tests.support.process import run_voxtray
from voxtray.control.server import ControlServer
from voxtray.errors import ExitCode
from voxtray.history.store import History


@pytest.fixture
def home(voxtray_home: Path) -> Path:
    with History(voxtray_home / "history.sqlite3") as history:
        first = history.add(
            "Send the report to Anneliese.",
            model="whisper-tiny.en",
            engine="ort",
            provider="cpu",
            audio_s=2.5,
            timings={"release_to_text": 180.25, "stt": 150.0},
        )
        history.mark_delivered(first)
        history.mark_verified(first, "verified")
        history.add("", model="whisper-tiny.en", engine="ort", provider="cpu", audio_s=0.4,
                    timings={})  # fmt: skip
        partial = history.add(
            "Café notes for tomorrow",
            model="whisper-base",
            engine="sherpa",
            provider="cuda",
            audio_s=4.0,
            timings={"release_to_text": 95.0},
        )
        history.mark_partial(partial, "Café ", 'window "notes" (0x400007)', "focus moved")
    return voxtray_home


def _lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_json_lists_entries_newest_first_without_empty(home: Path) -> None:
    result = run_voxtray("history", "--json", home=home)
    assert result.returncode == 0, result.stderr
    newest, oldest = _lines(result.stdout)
    assert newest["text"] == "Café notes for tomorrow"
    assert newest["target"] == 'window "notes" (0x400007)'
    assert (newest["model"], newest["provider"], newest["engine"]) == (
        "whisper-base",
        "cuda",
        "sherpa",
    )
    assert newest["delivered"] is False
    assert newest["release_to_text_ms"] == 95.0
    assert oldest["text"] == "Send the report to Anneliese."
    assert oldest["delivered"] is True
    assert oldest["verified"] == "verified"
    assert oldest["duration_s"] == 2.5
    assert oldest["release_to_text_ms"] == 180.2
    assert oldest["time"].endswith("Z")


def test_search_limit_and_all(home: Path) -> None:
    found = run_voxtray("history", "--json", "--search", "anneli", home=home)
    assert [row["text"] for row in _lines(found.stdout)] == ["Send the report to Anneliese."]
    accents = run_voxtray("history", "--json", "--search", "cafe", home=home)
    assert [row["text"] for row in _lines(accents.stdout)] == ["Café notes for tomorrow"]
    every = run_voxtray("history", "--json", "--all", home=home)
    assert len(_lines(every.stdout)) == 3
    one = run_voxtray("history", "--json", "--all", "--limit", "1", home=home)
    assert len(_lines(one.stdout)) == 1
    bad = run_voxtray("history", "--json", "--limit", "-3", home=home)
    assert bad.returncode == ExitCode.USAGE
    assert bad.stdout == ""


def test_empty_home_lists_nothing(voxtray_home: Path) -> None:
    result = run_voxtray("history", "--json", home=voxtray_home)
    assert (result.returncode, result.stdout) == (0, "")


def test_without_the_app_it_says_how_to_start_it(home: Path) -> None:
    result = run_voxtray("history", home=home)
    assert result.returncode == ExitCode.NOT_RUNNING
    assert "start it with `voxtray`" in result.stderr
    assert result.stdout == ""


def test_asks_the_running_app_to_open_the_window(home: Path) -> None:
    asked: list[str] = []

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request["cmd"])
        return {"ok": True, "state": "ready"}

    server = ControlServer(handler)
    assert server.start()
    try:
        result = run_voxtray("history", env={**os.environ, "VOXTRAY_HOME": str(home)})
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    assert asked == ["history"]


def test_odd_rows_are_listed_as_damaged_and_the_others_as_usual(home: Path) -> None:
    raw = sqlite3.connect(home / "history.sqlite3")
    raw.execute("UPDATE utterances SET created_at = 'yesterday' WHERE id = 1")
    raw.execute(
        "UPDATE utterances SET text = CAST(X'4361ff' AS TEXT), audio_s = 9e999 WHERE id = 2"
    )
    raw.execute(
        'UPDATE utterances SET timings_json = \'{"release_to_text": 1'
        + "0" * 400
        + "}' WHERE id = 3"
    )
    raw.commit()
    raw.close()
    result = run_voxtray("history", "--json", "--all", home=home)
    assert result.returncode == 0, result.stderr
    rows = {row["id"]: row for row in _lines(result.stdout)}
    assert rows[1]["time"] is None
    assert rows[1]["damaged"] == "its time is not a date"
    assert rows[1]["text"] == "Send the report to Anneliese."
    assert rows[2]["text"] == "Ca\ufffd"
    assert rows[2]["damaged"] == "text is not UTF-8; its duration is not a number of seconds"
    assert rows[3]["damaged"] is None
    assert rows[3]["release_to_text_ms"] is None
    assert rows[3]["text"] == "Café notes for tomorrow"
    assert result.stderr.strip() == (
        "voxtray: 2 of these entries are damaged: listed with what could be read (see `damaged`)"
    )


def test_listing_reads_under_another_programs_write_lock(home: Path) -> None:
    with database_locked(home / "history.sqlite3"):
        result = run_voxtray("history", "--json", "--search", "anneli", home=home)
    assert result.returncode == 0, result.stderr
    assert [row["text"] for row in _lines(result.stdout)] == ["Send the report to Anneliese."]


def test_listing_creates_nothing(voxtray_home: Path) -> None:
    result = run_voxtray("history", "--json", home=voxtray_home)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (voxtray_home / "history.sqlite3").exists()
