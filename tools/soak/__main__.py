"""`python -m tools.soak`: the soak run from the command line (see tools/soak/__init__.py)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import tools.soak
from tools.soak.rig import SPEED, WARMUP
from tools.soak.run import give_back_lost_references, run_soak
from voxtray.memory import return_large_blocks
from voxtray.models.store import ModelStore


def machine() -> str:
    import onnxruntime

    cpu = "unknown CPU"
    with open("/proc/cpuinfo", encoding="utf-8") as stream:
        for line in stream:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()},"
        f" onnxruntime {onnxruntime.__version__}, {platform.platform()}"
    )


@contextmanager
def _workdir(path: str | None) -> Iterator[Path]:
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="voxtray-soak-") as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.soak", description=tools.soak.__doc__)
    parser.add_argument("--cycles", type=int, default=500)
    parser.add_argument("--speed", type=float, default=SPEED, help="audio time compression")
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--workdir", help="keep the history database here")
    parser.add_argument("--trace", action="store_true", help="tracemalloc after warm-up")
    args = parser.parse_args(argv)
    if args.cycles < 1 or not 1 <= args.warmup <= args.cycles:
        parser.error("need --cycles >= 1 and 1 <= --warmup <= --cycles")
    from tests.support.models import suite_home
    from voxtray.models.catalog import load_catalog

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return_large_blocks()  # as the tray app does at start
    store = ModelStore(suite_home() / "models", load_catalog())
    print(machine(), flush=True)
    with _workdir(args.workdir) as workdir:
        report = run_soak(
            store,
            workdir,
            args.cycles,
            speed=args.speed,
            warmup=args.warmup,
            trace=args.trace,
            progress=lambda line: print(line, flush=True),
        )
    print(report.details())
    print(report.summary())
    for problem in report.problems():
        print("PROBLEM:", problem)
    if added := give_back_lost_references(report):
        print(f"(gave back {added} lost references to None/True/False so that Python exits)")
    return 1 if report.problems() else 0


if __name__ == "__main__":
    sys.exit(main())
