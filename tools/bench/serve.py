"""Load figures for `voxtray serve` beside faster-whisper-server on the same weights and
clips: requests/s and latency percentiles at several client counts, then server memory
over a long run of requests. Not a test; docs/serve.md quotes its output.

    .venv/bin/python -m tools.bench.serve --home ~/.cache/voxtray-test \
        --peer-python .venv-peers/bin/python --json serve-bench.json

Both servers run on loopback with 2 CPU threads, tiny.en int8, greedy decoding, English.
Levels alternate between the two servers so both see the same background load.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
EVAL = REPO / "tests" / "data" / "speech"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), 1):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} did not come up")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def clips(low: float, high: float) -> list[tuple[str, bytes]]:
    with (EVAL / "manifest.tsv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        (row["id"], (EVAL / row["wav"]).read_bytes())
        for row in rows
        if low <= float(row["duration_s"]) <= high
    ]


def start_voxtray(home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "VOXTRAY_HOME": str(home)}
    command = [
        sys.executable,
        "-m",
        "voxtray",
        "serve",
        "--port",
        str(port),
        "--no-auth",
        "--model",
        "whisper-tiny.en",
        "--provider",
        "cpu",
        "--precision",
        "int8",
        "--threads",
        "2",
        "--max-queue",
        "64",
    ]
    return subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.DEVNULL)


def start_peer(python: str, ct2: Path, port: int, folder: Path) -> subprocess.Popen[bytes]:
    config = folder / "fws.yaml"
    config.write_text(
        json.dumps(
            {
                "models": [
                    {
                        "name": "whisper-1",
                        "path": str(ct2),
                        "model_options": {
                            "compute_type": "int8",
                            "cpu_threads": 2,
                            "device": "cpu",
                        },
                        "transcribe_options": {
                            "beam_size": 1,
                            "language": "en",
                            "vad_filter": False,
                        },
                    }
                ]
            }
        )
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [
        python,
        "-m",
        "faster_whisper_server",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    return subprocess.Popen(command, env=env, cwd=folder, stderr=subprocess.DEVNULL)


def load(
    url: str,
    audio: list[tuple[str, bytes]],
    clients: int,
    seconds: float,
    budget: int | None = None,
) -> dict[str, Any]:
    """`clients` threads posting clips back to back for `seconds` (or `budget` requests)."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    sent = [0]

    def client(n: int) -> None:
        with httpx.Client(timeout=300) as session:
            i = n
            while time.monotonic() < deadline:
                with lock:
                    if budget is not None and sent[0] >= budget:
                        return
                    sent[0] += 1
                name, data = audio[i % len(audio)]
                i += 1
                began = time.perf_counter()
                reply = session.post(
                    url + "/v1/audio/transcriptions",
                    files={"file": (name + ".wav", data, "audio/wav")},
                    data={"model": "whisper-1", "language": "en"},
                )
                elapsed = time.perf_counter() - began
                with lock:
                    statuses[reply.status_code] = statuses.get(reply.status_code, 0) + 1
                    if reply.status_code == 200:
                        latencies.append(elapsed)

    started = time.monotonic()
    workers = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.monotonic() - started
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1)

    return {
        "clients": clients,
        "ok": len(latencies),
        "statuses": statuses,
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(latencies) / wall, 3),
        "p50_ms": pct(0.5) if ordered else None,
        "p95_ms": pct(0.95) if ordered else None,
        "mean_ms": round(1000 * statistics.fmean(ordered), 1) if ordered else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--home",
        type=Path,
        required=True,
        help="a VOXTRAY_HOME whose models/ holds whisper-tiny.en",
    )
    parser.add_argument("--peer-python", default=str(REPO / ".venv-peers/bin/python"))
    parser.add_argument("--levels", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=30.0, help="per level and server")
    parser.add_argument("--soak", type=int, default=2000, help="requests for the memory run")
    parser.add_argument("--soak-minutes", type=float, default=15.0, help="stop the soak here")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    audio = clips(4.8, 6.0)
    folder = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    home = folder / "home"
    home.mkdir()
    (home / "models").symlink_to((args.home / "models").resolve())
    ct2 = args.home / "models" / "whisper-tiny.en" / "ct2"
    servers = {}
    ports = {"voxtray": free_port(), "faster-whisper-server": free_port()}
    servers["voxtray"] = start_voxtray(home, ports["voxtray"])
    if args.peer_python != "none":  # "none": Voxtray alone (before/after a change)
        servers["faster-whisper-server"] = start_peer(
            args.peer_python, ct2, ports["faster-whisper-server"], folder
        )
    report: dict[str, Any] = {
        "clips": [name for name, _ in audio],
        "levels": [],
        "machine": {"cpus": os.cpu_count(), "load_before": os.getloadavg()},
    }
    try:
        for name, process in servers.items():
            url = f"http://127.0.0.1:{ports[name]}"
            wait_healthy(url, process)
            load(url, audio, 1, 60, budget=3)  # warm-up
            report[f"{name}_rss_idle_mb"] = round(rss_mb(process.pid), 1)
        for clients in [int(c) for c in args.levels.split(",")]:
            for name in servers:
                row = load(f"http://127.0.0.1:{ports[name]}", audio, clients, args.seconds)
                row["server"] = name
                report["levels"].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        report["soak"] = soak(servers, ports, audio, args.soak, args.soak_minutes)
    finally:
        for process in servers.values():
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
    report["machine"]["load_after"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


def soak(
    servers: dict[str, subprocess.Popen[bytes]],
    ports: dict[str, int],
    audio: list[tuple[str, bytes]],
    requests: int,
    minutes: float,
) -> dict[str, Any]:
    """Memory of each server before and after up to `requests` requests (4 clients)."""
    out: dict[str, Any] = {}
    for name, process in servers.items():
        url = f"http://127.0.0.1:{ports[name]}"
        before = rss_mb(process.pid), threads(process.pid)
        samples = []
        done = 0
        began = time.monotonic()
        while done < requests and time.monotonic() - began < 60 * minutes / len(servers):
            row = load(url, audio, 4, 3600, budget=min(100, requests - done))
            done += row["ok"] + sum(v for k, v in row["statuses"].items() if k != 200)
            samples.append((done, round(rss_mb(process.pid), 1)))
        out[name] = {
            "requests": done,
            "rss_before_mb": round(before[0], 1),
            "rss_after_mb": round(rss_mb(process.pid), 1),
            "threads_before": before[1],
            "threads_after": threads(process.pid),
            "rss_every_100": samples,
        }
        print(json.dumps({name: out[name]}), file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
