"""The control socket: commands reach the running instance, only the user can open it, a
second instance finds the first, and a crashed instance's socket is cleaned up."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from voxtray.choices import DictationState
from voxtray.control.server import (
    ControlServer,
    NotRunningError,
    RefusedError,
    StartupHandler,
    send,
    socket_path,
)
from voxtray.errors import ExitCode


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path))
    return tmp_path


def test_socket_lives_under_voxtray_home_or_runtime_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path / "home"))
    assert socket_path() == tmp_path / "home" / "run" / "control.sock"
    monkeypatch.delenv("VOXTRAY_HOME")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    assert socket_path() == tmp_path / "xdg" / "voxtray" / "control.sock"


def test_commands_round_trip_and_permissions(home: Path) -> None:
    seen: list[str] = []

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request["cmd"])
        return {"ok": True, "state": DictationState.READY}  # a StrEnum goes out as its value

    server = ControlServer(handler)
    assert server.start()
    try:
        assert send("toggle") == {"ok": True, "state": "ready"}
        assert send("status")["state"] == "ready"
        assert seen == ["toggle", "status"]
        assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(server.path.parent.stat().st_mode) == 0o700
        assert send("reboot")["ok"] is False  # unknown commands never reach the handler
        assert seen == ["toggle", "status"]
    finally:
        server.stop()
    assert not server.path.exists()


def test_start_up_answers_then_hands_over_what_it_kept(home: Path) -> None:
    """Before the app can act: status is loading, start is refused with exit code 8,
    quit and show are kept (once each) for the handler that takes over."""
    starting = StartupHandler()
    server = ControlServer(starting)
    assert server.start()
    try:
        assert send("status")["state"] == "loading"
        with pytest.raises(RefusedError) as refused:
            send("start")
        assert refused.value.exit_code == ExitCode.NOT_RUNNING
        assert send("stop")["ok"] is True
        for command in ("quit", "show", "history", "quit"):
            assert send(command)["ok"] is True
        seen: list[str] = []

        def handler(request: dict[str, Any]) -> dict[str, Any]:
            seen.append(request["cmd"])
            return {"ok": True, "state": "ready"}

        assert starting.hand_over(handler) == ["quit", "show", "history"]
        # The server still holds the start-up handler; it forwards from now on.
        assert send("toggle") == {"ok": True, "state": "ready"}
        assert seen == ["toggle"]
        assert starting.hand_over(handler) == []
    finally:
        server.stop()


def test_a_refusal_with_an_exit_code_raises_it(home: Path) -> None:
    """`start` while the microphone is lost: the CLI prints the reason and exits 3."""

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": False, "state": "error", "error": "cannot start dictation: mic gone",
                "exit_code": int(ExitCode.NOT_FOUND)}  # fmt: skip

    server = ControlServer(handler)
    assert server.start()
    try:
        with pytest.raises(RefusedError) as refused:
            send("start")
        assert str(refused.value) == "cannot start dictation: mic gone"
        assert refused.value.exit_code == ExitCode.NOT_FOUND
        env = {**os.environ, "VOXTRAY_HOME": str(home)}
        done = subprocess.run(
            [sys.executable, "-m", "voxtray", "start"], env=env, capture_output=True, text=True
        )
        assert done.returncode == ExitCode.NOT_FOUND
        assert done.stderr == "voxtray: error: cannot start dictation: mic gone\n"
    finally:
        server.stop()


def test_second_server_defers_to_the_first(home: Path) -> None:
    first = ControlServer(lambda request: {"ok": True, "state": "ready"})
    assert first.start()
    try:
        assert ControlServer(lambda request: {"ok": True}).start() is False
    finally:
        first.stop()


def test_stale_socket_from_a_crash_is_replaced(home: Path) -> None:
    path = socket_path()
    path.parent.mkdir(parents=True, mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens: what a killed instance leaves
    server = ControlServer(lambda request: {"ok": True, "state": "ready"})
    assert server.start()
    server.stop()


def test_two_instances_starting_at_once_elect_one(home: Path) -> None:
    results: list[bool] = []
    servers = [ControlServer(lambda request: {"ok": True}) for _ in range(4)]
    barrier = threading.Barrier(len(servers))

    def race(server: ControlServer) -> None:
        barrier.wait()
        results.append(server.start())

    threads = [threading.Thread(target=race, args=(s,)) for s in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert sorted(results) == [False, False, False, True]
    finally:
        for server in servers:
            server.stop()


def test_cli_without_a_running_instance(home: Path) -> None:
    with pytest.raises(NotRunningError):
        send("status")
    done = subprocess.run(
        [sys.executable, "-m", "voxtray", "status"],
        env={**os.environ, "VOXTRAY_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == ExitCode.NOT_RUNNING
    assert done.stderr.strip() == "voxtray: error: Voxtray is not running (start it with: voxtray)"


def test_the_command_line_knows_every_control_command() -> None:
    from voxtray.cli.control import CONTROL_COMMANDS, is_control
    from voxtray.control.server import COMMANDS

    # `history` has options of its own (`--json` lists entries), so the full parser reads it.
    assert set(CONTROL_COMMANDS) | {"history"} == set(COMMANDS)
    assert not is_control(["history"])
    assert is_control(["stop"])
    assert is_control(["status", "--json"])
    assert not is_control(["stop", "--help"])  # the full parser answers that
    assert not is_control(["transcribe", "x.wav"])
    assert not is_control([])
