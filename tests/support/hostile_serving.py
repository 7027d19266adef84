"""`voxtray serve` as a real process on loopback whose model is a stand-in, for the
hostile-network tests: the real flags, sockets, HTTP and Wyoming stacks and limits, with
no model to download. Run as `python -m tests.support.hostile_serving serve --port 0 ...`."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tests.support.audio import REPO
from tests.support.serving import Served, start_voxtray
from voxtray.inference.recognizers.base import Transcript
from voxtray.serve.service import InferenceService, ServiceInfo

MODEL = "stand-in"


class LoudnessVad:
    """Speech wherever a frame is loud: enough for the server's segmenter."""

    def reset(self) -> None:
        pass

    def __call__(self, frame: NDArray[np.float32]) -> float:
        return 0.9 if float(np.abs(frame).mean()) > 0.01 else 0.0


class SecondsRecognizer:
    """Says how many seconds of audio it heard."""

    engine = "stand-in"
    model = MODEL
    provider = "cpu"

    def warmup(self) -> None:
        pass

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        return Transcript(
            text=f"heard {audio.size / 16000:.1f} s", tokens=[], timings_ms={}, provider="cpu"
        )


def stand_in_service(
    args: argparse.Namespace, say: Callable[[str], None], install_progress: object = None
) -> tuple[InferenceService, Callable[[], dict[str, Any]]]:
    info = ServiceInfo(MODEL, "stand-in", "cpu", "cpu", "fp32", ["en"])
    vad: Any = LoudnessVad()
    service = InferenceService(
        SecondsRecognizer(),
        vad,
        info,
        max_queue=args.max_queue,
        max_audio_s=args.max_audio_s,
        max_sample_rate=args.max_sample_rate,
    )
    return service, dict


def start_stand_in(home: Path, *args: str) -> Served:
    """The stand-in server with VOXTRAY_HOME=home and `--no-auth` unless a key is asked."""
    return start_voxtray(home, *args, module=("-m", "tests.support.hostile_serving"), timeout_s=60)


def peak_rss_mb(process: subprocess.Popen[str]) -> float:
    """The process's peak resident memory so far (VmHWM)."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def rss_mb(process: subprocess.Popen[str]) -> float:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def main() -> int:
    import voxtray.serve.loader
    from voxtray.cli.main import main as cli_main

    voxtray.serve.loader.load_service = stand_in_service
    os.chdir(REPO)
    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
