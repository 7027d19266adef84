"""The kit's measurements under load: bench --matrix, and `voxtray serve` under several
numbers of concurrent clients."""

from __future__ import annotations

import csv
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tools.gpu.machine import capture
from tools.gpu.sites import Kit
from tools.gpu.steps import Step, kill, say


def bench_matrix(kt: Kit, record: Step, limit: float, max_clip_s: float) -> None:
    out = kt.runner.out / "matrix.json"
    manifest = kt.root / "eval" / "manifest.tsv"
    argv = kt.voxtray(
        "base",
        "bench",
        "--matrix",
        "--manifest",
        str(manifest),
        "--models",
        ",".join(kt.info["whisper_models"]),
        "--precisions",
        "fp32,int8",
        "--providers",
        "cpu,cuda",
        "--max-clip-s",
        str(max_clip_s),
        "--json",
        str(out),
    )
    code = kt.runner.command("bench-matrix", argv, kt.env(), limit)
    if code != 0 or not out.is_file():
        raise RuntimeError(f"exit {code}; see bench-matrix.log")
    report = json.loads(out.read_text(encoding="utf-8"))
    record.result = {"clips": report.get("clips"), "cells": report.get("matrix")}


def _clips(root: Path, low: float, high: float) -> list[tuple[str, bytes]]:
    with (root / "eval" / "manifest.tsv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    chosen = [r for r in rows if low <= float(r["duration_s"]) <= high] or rows[:3]
    return [(r["id"], (root / "eval" / r["wav"]).read_bytes()) for r in chosen]


def _gpu_memory_of(pid: int) -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    rows = capture([smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader"], 20)
    return next((row for row in rows.splitlines() if row.split(",")[0].strip() == str(pid)), rows)


def serve_load(
    kt: Kit,
    record: Step,
    limit: float,
    provider: str,
    precision: str,
    levels: list[int],
    seconds: float,
) -> None:
    """`voxtray serve` on `provider` under each number of concurrent clients, one request
    per encoder call (the server does not batch requests)."""
    from tools.bench import serve as bench_serve  # the load generator of docs/serve.md

    began = time.monotonic()
    port = bench_serve.free_port()
    name = f"serve-{provider}-{precision}"
    log = kt.runner.out / f"{name}.log"
    argv = kt.voxtray(
        "base",
        "serve",
        "--port",
        str(port),
        "--no-auth",
        "--model",
        kt.info["whisper_models"][0],
        "--provider",
        provider,
        "--precision",
        precision,
        "--threads",
        "2",
        "--max-queue",
        "64",
    )
    with log.open("wb") as err:
        server = subprocess.Popen(
            argv, stdout=err, stderr=err, env=kt.env(), start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    levels_done: list[dict[str, Any]] = []
    record.result = {
        "provider_asked": provider,
        "precision": precision,
        "levels": levels_done,
        "batching": "none: one request per encoder call",
    }
    try:
        while "listening on" not in log.read_text(errors="replace"):
            if server.poll() is not None:
                raise RuntimeError(f"server exited {server.returncode}; see {name}.log")
            if time.monotonic() - began > limit / 2:
                raise subprocess.TimeoutExpired(argv, limit / 2)
            time.sleep(0.3)
        audio = _clips(kt.root, 4.8, 6.0)
        bench_serve.load(url, audio, 1, 60, budget=3)  # warm-up
        import httpx

        record.result["health"] = httpx.get(url + "/health", timeout=30).json()
        record.result["clips"] = [n for n, _ in audio]
        for clients in levels:
            if limit - (time.monotonic() - began) < seconds + 10:
                record.detail = f"stopped before {clients} clients: time"
                break
            row = bench_serve.load(url, audio, clients, seconds)
            row["gpu_memory"] = _gpu_memory_of(server.pid)
            levels_done.append(row)
            say(f"{name}: {json.dumps(row)}")
        record.result["health_after"] = httpx.get(url + "/health", timeout=30).json()
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            kill(server)
