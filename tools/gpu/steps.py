"""device-run's steps: each runs inside one overall deadline with its own limit, and a step
that fails or runs out of time does not stop the others."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGING_RESERVE_S = 15


def say(message: str) -> None:
    print(f"device-run: {message}", file=sys.stderr, flush=True)


@dataclass
class Step:
    name: str
    status: str = "not run"  # ok, failed, timeout, skipped
    seconds: float = 0.0
    detail: str = ""
    result: dict[str, Any] = field(default_factory=dict)


class Runner:
    """Runs steps inside one overall deadline, each with its own limit."""

    def __init__(self, budget_s: float, out: Path) -> None:
        self.deadline = time.monotonic() + budget_s
        self.out = out
        self.steps: list[Step] = []

    def left(self) -> float:
        return self.deadline - time.monotonic() - PACKAGING_RESERVE_S

    def step(
        self, name: str, action: Callable[[Step, float], None], limit_s: float, need_s: float = 5
    ) -> Step:
        record = Step(name)
        self.steps.append(record)
        left = self.left()
        if left < need_s:
            record.status, record.detail = "skipped", f"budget: {left:.0f} s left"
            say(f"{name}: skipped ({record.detail})")
            return record
        say(f"{name}: start")
        began = time.monotonic()
        try:
            action(record, min(limit_s, left))
            if record.status == "not run":
                record.status = "ok"
        except subprocess.TimeoutExpired as exc:
            record.status, record.detail = "timeout", f"stopped after {exc.timeout:.0f} s"
        except Exception as exc:  # one step's failure never stops the others
            record.status = "failed"
            record.detail = record.detail or f"{type(exc).__name__}: {exc}"
        record.seconds = round(time.monotonic() - began, 1)
        say(f"{name}: {record.status} in {record.seconds} s {record.detail}".rstrip())
        return record

    def command(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        timeout: float,
        stdout: Path | None = None,
    ) -> int:
        """Run `argv` in its own process group; stderr to out/<name>.log."""
        log = self.out / f"{name}.log"
        out = stdout or self.out / f"{name}.out"
        with log.open("ab") as err, out.open("wb") as std:
            err.write(f"$ {' '.join(argv)}\n".encode())
            err.flush()
            process = subprocess.Popen(
                argv, stdout=std, stderr=err, env=env, start_new_session=True, cwd=self.out
            )
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill(process)
                raise


def kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def json_in(text: str) -> dict[str, Any]:
    """The JSON object a command printed, also when a library printed a line before it."""
    try:
        return dict(json.loads(text))
    except ValueError:
        start = text.index("\n{") + 1 if not text.startswith("{") else 0
        return dict(json.JSONDecoder().raw_decode(text[start:])[0])
