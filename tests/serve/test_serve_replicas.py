"""Two `voxtray serve` replicas behind nginx with packaging/serve/nginx.conf: one is
killed and restarted under a bounded load on loopback, and no request fails."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.audio import Clip
from tests.support.models import ensure_installed
from tests.support.serving import REPO, Served, free_port, serve_home, start_voxtray, wait_for_port
from tests.support.waiting import wait_for
from voxtray.models.store import InstalledModel, ModelStore

pytest.importorskip("starlette", reason="the serve extra is not installed")
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
if NGINX is None:
    pytest.skip("nginx is not installed (apt-get install nginx)", allow_module_level=True)

pytestmark = pytest.mark.slow


def _render(runtime: Path, listen: int, port_a: int, port_b: int) -> Path:
    text = (REPO / "packaging/serve/nginx.conf").read_text()
    for key, value in {
        "@RUNTIME@": str(runtime),
        "@LISTEN@": str(listen),
        "@PORT_A@": str(port_a),
        "@PORT_B@": str(port_b),
    }.items():
        text = text.replace(key, value)
    if os.geteuid() == 0:
        text = "user root;\n" + text  # the workers must reach the test's private folder
    conf = runtime / "nginx.conf"
    conf.write_text(text)
    return conf


@pytest.fixture
def homes(tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel) -> list[Path]:
    ensure_installed(model_store, "silero-vad-v6")
    return [serve_home(tmp_path / name, model_store) for name in ("a", "b")]


def _replica(home: Path, port: int) -> Served:
    return start_voxtray(home, "--port", str(port), "--model", "whisper-tiny.en")


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[int, list[int]]]:
    ports = [free_port(), free_port()]
    listen = free_port()
    runtime = tmp_path / "nginx"
    runtime.mkdir()
    conf = _render(runtime, listen, *ports)
    nginx = subprocess.Popen([NGINX, "-c", str(conf), "-g", "daemon off;"], stderr=subprocess.PIPE)
    wait_for_port(listen, nginx, 20)
    yield listen, ports
    nginx.send_signal(signal.SIGQUIT)
    nginx.wait(timeout=15)


def test_replica_killed_and_restarted(
    homes: list[Path], proxy: tuple[int, list[int]], eval_clips: list[Clip]
) -> None:
    listen, ports = proxy
    first = _replica(homes[0], ports[0])
    (homes[1] / "serve").mkdir(parents=True)
    shutil.copy2(homes[0] / "serve" / "api-key", homes[1] / "serve" / "api-key")
    replicas = [first, _replica(homes[1], ports[1])]
    clip = next(c for c in eval_clips if 4.8 <= c.duration_s <= 6.0)
    data = clip.path.read_bytes()
    url = f"http://127.0.0.1:{listen}/v1/audio/transcriptions"
    answers: list[tuple[float, int, str]] = []
    stop = threading.Event()

    def client() -> None:
        with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {first.token}"}) as c:
            for _ in range(200):  # bounded, whatever happens
                if stop.is_set():
                    return
                reply = c.post(url, files={"file": ("a.wav", data)}, data={"model": "whisper-1"})
                answers.append(
                    (
                        time.monotonic(),
                        reply.status_code,
                        reply.headers.get("x-voxtray-replica", ""),
                    )
                )

    clients = [threading.Thread(target=client) for _ in range(2)]
    try:
        for thread in clients:
            thread.start()
        wait_for(
            lambda: {r.rsplit(":", 1)[-1] for _, _, r in answers} >= {str(p) for p in ports}, 90
        )
        replicas[0].process.send_signal(signal.SIGKILL)
        replicas[0].process.wait(timeout=10)
        killed_at = time.monotonic()
        time.sleep(3)
        replicas[0] = _replica(homes[0], ports[0])
        restarted_at = time.monotonic()
        # nginx retries a failed replica after fail_timeout (5 s); then it must be used again.
        wait_for(
            lambda: any(t > restarted_at and r.endswith(f":{ports[0]}") for t, _, r in answers), 60
        )
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=120)
        for replica in replicas:
            replica.stop()
    statuses = [status for _, status, _ in answers]
    assert statuses.count(200) == len(statuses), statuses
    used = {r.rsplit(":", 1)[-1] for t, _, r in answers if t < killed_at}
    assert used == {str(p) for p in ports}, answers
    assert any(t > killed_at and t < restarted_at for t, _, _ in answers)  # served meanwhile
    assert any(t > restarted_at and r.endswith(f":{ports[0]}") for t, _, r in answers), answers
