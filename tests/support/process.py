"""The one way tests run the `voxtray` command: a fresh interpreter (or the bundle), as a
user starts it, and what it printed."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def run_voxtray(
    *args: str,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    timeout: float = 600,
    stdin: int | None = subprocess.DEVNULL,
    command: Sequence[str] = (sys.executable, "-m", "voxtray"),
    cwd: Path | str | None = None,
    limit_file_bytes: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """`voxtray ARGS`: with `env` as given (default: this process's), `home` as its
    VOXTRAY_HOME; `command` is the bundle's executable for bundle tests. With
    `limit_file_bytes`, writes past that size fail with EFBIG, as on a full disk."""
    if env is None:
        # A developer's own catalog or debug switch must not change what a test sees.
        environ = {
            k: v for k, v in os.environ.items() if k not in ("VOXTRAY_CATALOG", "VOXTRAY_DEBUG")
        }
    else:
        environ = dict(env)
    if home is not None:
        environ["VOXTRAY_HOME"] = str(home)

    def limit() -> None:
        if limit_file_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    return subprocess.run(
        [*command, *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=stdin,
        cwd=cwd,
        preexec_fn=limit if limit_file_bytes is not None else None,
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line of stderr (progress lines may come around it)."""
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("voxtray: error: ")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]


def stop_process(process: subprocess.Popen[Any] | None) -> None:
    """SIGTERM, then SIGKILL after 5 s; nothing for a process already gone."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def stop_processes(processes: list[subprocess.Popen[Any]]) -> None:
    """`stop_process` for each, the last started first."""
    for process in reversed(processes):
        stop_process(process)


def start_announcing(
    command: Sequence[str],
    env: Mapping[str, str],
    what: str,
    ready: str = "ready",
    timeout: float = 30.0,
) -> tuple[subprocess.Popen[str], str]:
    """A helper process (a target window, say) that prints a line starting with `ready`
    once it is up: the process and that line. One that dies or stays silent is stopped,
    and the error says what it printed."""
    process = subprocess.Popen(
        list(command), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    line = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        line = process.stdout.readline()
        if line.startswith(ready):
            return process, line
    rest = "" if process.poll() is None else process.stdout.read()
    stop_process(process)
    process.stdout.close()
    raise RuntimeError(f"{what} did not start: {line}{rest}")
