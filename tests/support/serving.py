"""Start `voxtray serve` (and peer servers) as real processes on loopback for tests."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile

from tests.support.audio import REPO
from tests.support.models import ensure_installed
from voxtray.models.store import ModelStore

PEERS_VENV = Path(os.environ.get("VOXTRAY_PEERS_VENV", REPO / ".venv-peers"))


@dataclass
class Served:
    """A running server process and what it printed."""

    process: subprocess.Popen[str]
    url: str = ""
    wyoming_port: int = 0
    token: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def _reader(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        lines.put(line.rstrip("\n"))
    lines.put("")


def serve_home(tmp: Path, store: ModelStore) -> Path:
    """A data folder whose models are the test store's (read only) and nothing else."""
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    link = home / "models"
    if not link.exists():
        link.symlink_to(store.root, target_is_directory=True)
    return home


def start_voxtray(
    home: Path, *args: str, timeout_s: float = 180.0, module: tuple[str, ...] = ("-m", "voxtray")
) -> Served:
    """`voxtray serve --port 0 ARGS` with VOXTRAY_HOME=home, once it listens."""
    env = {**os.environ, "VOXTRAY_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, *module, "serve", "--port", "0", *args]
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(process, lines), daemon=True).start()
    served = Served(process)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        served.lines.append(line)
        if match := re.search(r"Wyoming on tcp://[^:]+:(\d+)", line):
            served.wyoming_port = int(match.group(1))
        if match := re.search(r"listening on (\S+)", line):
            served.url = match.group(1)
            break
        if line == "" and process.poll() is not None:
            break
    if not served.url:
        served.stop()
        raise AssertionError("voxtray serve did not start:\n" + "\n".join(served.lines))
    key = home / "serve" / "api-key"
    served.token = key.read_text().strip() if key.exists() else ""
    return served


@contextlib.contextmanager
def serving_tiny_en(tmp: Path, store: ModelStore, *flags: str) -> Iterator[Served]:
    """`voxtray serve` of whisper-tiny.en and the voice detector from the test store, with
    `flags`; stopped on leaving."""
    for name in ("whisper-tiny.en", "silero-vad-v6"):
        ensure_installed(store, name)
    server = start_voxtray(serve_home(tmp, store), "--model", "whisper-tiny.en", *flags)
    try:
        yield server
    finally:
        server.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"nothing listens on {port} after {timeout_s} s")


def long_quiet_flac(path: Path, seconds: float) -> Path:
    """A small file holding a long stretch of near-silence (FLAC packs it tightly)."""
    samples = np.zeros(int(seconds * 16000), dtype=np.int16)
    samples[::997] = 3
    soundfile.write(str(path), samples, 16000, format="FLAC")
    return path
