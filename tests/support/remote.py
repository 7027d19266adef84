"""Remote servers for tests: a raw loopback TCP server that misbehaves as told, and the
helpers that run a dictation or a transcription against a server."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.audio import Clip
from tests.support.dictation_rig import build_dictation
from tests.support.outputs import RecordingOutput
from tests.support.serving import REPO
from voxtray.choices import Engine
from voxtray.config import Settings
from voxtray.dictation.session import Dictation
from voxtray.inference.remote_key import ApiKeyStore
from voxtray.models.store import ModelStore

Behaviour = Callable[[socket.socket], None]


@dataclass
class RawServer:
    """A loopback TCP server that answers each connection with `behaviour`."""

    behaviour: Behaviour
    sock: socket.socket = field(default_factory=socket.socket)
    received: list[bytes] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            with contextlib.suppress(OSError):
                self.behaviour(conn)


@pytest.fixture
def raw_server() -> Iterator[Callable[[Behaviour], RawServer]]:
    made: list[RawServer] = []

    def start(behaviour: Behaviour) -> RawServer:
        server = RawServer(behaviour)
        server.sock.bind(("127.0.0.1", 0))
        server.sock.listen(16)
        threading.Thread(target=server.serve, daemon=True).start()
        made.append(server)
        return server

    yield start
    for server in made:
        server.stop.set()
        server.sock.close()


def read_request(conn: socket.socket) -> bytes:
    """The request head and its body (by Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


def http_answer(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def read_events(conn: socket.socket, until: str) -> None:
    stream = conn.makefile("rb")
    for _ in range(1000):
        line = stream.readline()
        if not line:
            return
        header = json.loads(line)
        stream.read(header.get("data_length", 0) + header.get("payload_length", 0))
        if header["type"] == until:
            return


def transcribe_with_server(home: Path, clip: Clip, *args: str, key: str = "") -> tuple[dict, str]:
    env = {**os.environ, "VOXTRAY_HOME": str(home), "VOXTRAY_API_KEY": key}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "voxtray",
            "transcribe",
            str(clip.path),
            "--model",
            "whisper-tiny.en",
            "--json",
            *args,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


API_KEY = "vx-secret-key-for-the-test"


def dictate(
    tmp_path: Path, store: ModelStore, settings: Settings, key: str
) -> tuple[Dictation, Any, list[str], RecordingOutput]:
    keys = ApiKeyStore(tmp_path / "remote-api-key", keyring=None)
    keys.set(key)
    rig = build_dictation(store, tmp_path / "history.sqlite3", api_keys=keys)
    rig.dictation.load(settings)
    assert rig.dictation.start()
    rig.fake.streams[-1].wait_for(rig.speak())
    return rig.dictation, rig.dictation.stop(), rig.warnings, rig.output


def remote_settings(url: str, timeout_s: float = 60.0) -> Settings:
    return Settings(engine=Engine.REMOTE, remote_url=url, remote_timeout_s=timeout_s)


class MemoryKeyring:
    """The keyring module's interface, in memory."""

    def __init__(self) -> None:
        self.saved: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, account: str) -> str | None:
        return self.saved.get((service, account))

    def set_password(self, service: str, account: str, password: str) -> None:
        self.saved[(service, account)] = password

    def delete_password(self, service: str, account: str) -> None:
        del self.saved[(service, account)]
