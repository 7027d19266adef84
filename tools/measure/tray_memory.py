"""Resident memory of the real tray app: idle after start, then over many dictations.

Starts what the desktop end-to-end test starts (Xvfb, trayer's system tray, a PulseAudio
virtual microphone, a text window to type into) and the real `python -m voxtray`, then
dictates random crops of the evaluation clips (1-7 s, each a new length) through the
control socket, reading the app's RSS from /proc after each one. Audio plays in real
time, so 100 dictations take about 10 minutes. Not part of the test suite.

    VOXTRAY_TEST_HOME=~/.cache/voxtray-test nice -n 10 \\
        python -m tools.measure.tray_memory --dictations 100 --csv /tmp/tray-rss.csv

`--app-dir` runs another checkout's app (e.g. an older commit) against the same models.
Every `--rest-every` dictations (and after the last) it leaves the app idle until the app
hands its working memory back, and samples RSS again: the memory it keeps, without the
swing of what the last utterance used.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np

from tests.support.audio import REPO, SPEECH_DIR, read_wav, write_wav
from tests.support.models import suite_home
from tests.support.pulse import virtual_microphone
from tests.support.waiting import wait_for
from tests.support.x11 import TargetWindow, XServer, start_tray, tray_panel, x_env
from voxtray.dictation.watcher import RELEASE_IDLE_AFTER_S

RATE = 16000
IDLE_SETTLE_S = 5.0
REST_MARGIN_S = 3.0


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/statm", encoding="ascii") as stream:
        return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def send(home: Path, command: str) -> dict[str, Any]:
    """One command on the app's control socket (the protocol `voxtray start` speaks)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(str(home / "run" / "control.sock"))
        client.sendall(json.dumps({"cmd": command}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = client.recv(4096)
            if not chunk:
                break
            data += chunk
    reply: dict[str, Any] = json.loads(data)
    return reply


def state(home: Path) -> str:
    try:
        return str(send(home, "status").get("state"))
    except OSError:
        return "down"


def settled_text(target: TargetWindow, timeout: float = 3.0) -> str:
    """What the window shows once typing stops changing it."""
    deadline = time.monotonic() + timeout
    last = target.text()
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = target.text()
        if now == last and now:
            break
        last = now
    return last.strip()


def crops(count: int, folder: Path, seed: int = 0) -> list[Path]:
    """`count` WAV files, each a random 1-7 s crop of the evaluation clips joined."""
    speech = np.concatenate([read_wav(p) for p in sorted((SPEECH_DIR / "wav").glob("*.wav"))])
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        length = int(rng.uniform(1.0, 7.0) * RATE)
        start = int(rng.integers(0, speech.size - length))
        path = folder / f"crop-{i:04d}.wav"
        write_wav(path, speech[start : start + length])
        paths.append(path)
    return paths


def measure(
    app_dir: Path, models: Path, dictations: int, rows: list[dict[str, Any]], rest_every: int
) -> None:
    with tempfile.TemporaryDirectory(prefix="voxtray-mem-") as tmp:
        work = Path(tmp)
        home = work / "home"
        home.mkdir()
        (home / "models").symlink_to(models, target_is_directory=True)
        (home / "settings.json").write_text(
            json.dumps({"hotkey_backend": "none", "hud_enabled": True, "first_run_done": True})
        )
        clips = crops(dictations, work)
        server = XServer()
        tray = start_tray(server.name)
        try:
            wait_for(lambda: tray_panel(server.name) is not None, 15, "trayer")
            with virtual_microphone() as mic:
                env = {**mic.env, **x_env(server.name)}
                _run_app(app_dir, home, work, clips, env, mic, rows, rest_every)
        finally:
            tray.terminate()
            tray.wait(timeout=5)
            server.stop()


def _run_app(
    app_dir: Path,
    home: Path,
    work: Path,
    clips: list[Path],
    env: dict[str, str],
    mic: Any,
    rows: list[dict[str, Any]],
    rest_every: int,
) -> None:
    env = {**env, "VOXTRAY_HOME": str(home)}
    target = TargetWindow(env["DISPLAY"], work)
    log = (work / "voxtray.log").open("w")
    app = subprocess.Popen(
        [sys.executable, "-m", "voxtray"], env=env, stdout=log, stderr=log, cwd=app_dir
    )
    began = time.monotonic()
    try:
        wait_for(lambda: state(home) == "ready", 300, "the app to become ready")
        ready_s = time.monotonic() - began
        time.sleep(IDLE_SETTLE_S)
        rows.append(
            {"dictation": 0, "audio_s": 0.0, "rss_mb": rss_mb(app.pid), "text": "", "rested_mb": ""}
        )
        print(f"ready after {ready_s:.1f} s, idle RSS {rows[-1]['rss_mb']:.1f} MB", flush=True)
        for index, clip in enumerate(clips, start=1):
            target.clear()
            target.focus()
            send(home, "start")
            mic.play(clip)
            send(home, "stop")
            wait_for(lambda: state(home) == "ready", 60, f"dictation {index}")
            with wave.open(str(clip)) as stream:
                audio_s = stream.getnframes() / RATE
            text = settled_text(target)  # the app is idle again by then
            rows.append(
                {
                    "dictation": index,
                    "audio_s": round(audio_s, 3),
                    "rss_mb": round(rss_mb(app.pid), 1),
                    "text": text,
                }
            )
            if index % 10 == 0 or index == 1:
                print(f"{index} dictations: RSS {rows[-1]['rss_mb']:.1f} MB", flush=True)
            if rest_every and (index % rest_every == 0 or index == len(clips)):
                time.sleep(RELEASE_IDLE_AFTER_S + REST_MARGIN_S)
                rows[-1]["rested_mb"] = round(rss_mb(app.pid), 1)
                print(f"{index} dictations, then idle: RSS {rows[-1]['rested_mb']:.1f} MB")
    finally:
        try:
            send(home, "quit")
            app.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            app.kill()
            app.wait()
        target.close()
        log.close()


def summary(rows: list[dict[str, Any]]) -> str:
    rss = [float(r["rss_mb"]) for r in rows]
    if len(rss) < 2:
        return f"idle {rss[0]:.1f} MB" if rss else "no sample"
    first, last = rss[1], rss[-1]
    rested = [f"{r['dictation']}: {r['rested_mb']}" for r in rows if r.get("rested_mb")]
    return (
        f"idle {rss[0]:.1f} MB; after dictation 1: {first:.1f}; after dictation"
        f" {len(rss) - 1}: {last:.1f} ({100 * (last - first) / first:+.1f} % from the first);"
        f" peak {max(rss):.1f}; empty transcripts {sum(1 for r in rows[1:] if not r['text'])}"
        + (f"; idle again after dictations {', '.join(rested)}" if rested else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.measure.tray_memory", description=__doc__
    )
    parser.add_argument("--dictations", type=int, default=100)
    parser.add_argument("--app-dir", type=Path, default=REPO, help="checkout to run")
    parser.add_argument(
        "--rest-every",
        type=int,
        default=50,
        help="after every N dictations (and the last) leave the app idle until it hands back"
        " its working memory, and sample again (0: never)",
    )
    parser.add_argument("--csv", type=Path, help="write one row per sample here")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    try:
        models = suite_home() / "models"
        measure(args.app_dir.resolve(), models, args.dictations, rows, args.rest_every)
    finally:
        if args.csv and rows:
            with args.csv.open("w", newline="", encoding="utf-8") as stream:
                writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
