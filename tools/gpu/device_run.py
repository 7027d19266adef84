"""Run the GPU kit on a lent GPU machine: stash the parts call by call, then install and run
every check, each with its own time limit, and leave the results in $OUT.

    bash packaging/gpu/device-run stash [--probe]   # calls 1..N-1: keep the carried part
    bash packaging/gpu/device-run run               # call N: the last part, then the checks

The parts travel as carried paths under packaging/gpu/parts/ and are copied to a stash
folder outside the checkout ($VOXTRAY_GPU_STASH, default /var/tmp/voxtray-gpu-kit), which
stays as long as the machine stays warm. `run` joins and checks them, installs the wheels
with pip --no-deps into a private folder, converts the models with voxtray's converter
and runs: the self-test (fp32 and int8 on cuda, tensorrt), each induced fallback, bench
--matrix, and voxtray serve under 1/4/16 concurrent clients. A step that fails or runs out
of time does not stop the others. $OUT gets three files: summary.txt, summary.json and
results.tar.xz (every step's JSON and log). Standard library only, Python 3.12.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from tools.gpu import kit
from tools.gpu.install import convert_models, install
from tools.gpu.load import bench_matrix, serve_load
from tools.gpu.machine import environment, gpu_present, probe
from tools.gpu.report import write_results
from tools.gpu.selftests import SELFTESTS, run_selftest
from tools.gpu.sites import Kit
from tools.gpu.stash import join_and_extract, stash, work_dir
from tools.gpu.steps import Runner, Step


def run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    work = work_dir()
    results = Path(args.out or os.environ.get("OUT") or work / "results")
    results.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    runner = Runner(args.budget_s, out)
    gpu = gpu_present()
    status: dict[str, Any] = {}

    def do_stash(record: Step, _limit: float) -> None:
        status.update(stash(args.parts))
        record.result = status
        if status.get("missing") or status.get("error"):
            record.status = "failed"
            record.detail = status.get("error") or f"missing {', '.join(status['missing'])}"

    runner.step("stash", do_stash, 120)
    runner.step("environment", lambda r, _l: environment(r, out), 120)
    complete = not (status.get("missing") or status.get("error"))
    kt = Kit(work, runner)
    if complete:
        extracted = runner.step("join-extract", lambda r, _l: join_and_extract(work, r), 180)
        if extracted.status == "ok":
            kt.info = json.loads((kt.root / "KIT.json").read_text(encoding="utf-8"))
            installed = runner.step("install", lambda r, limit: install(kt, r, limit), 180)
            if installed.status == "ok":
                runner.step("sites", lambda r, _l: kt.build_sites(r), 60)
                runner.step(
                    "convert-models", lambda r, limit: convert_models(kt, r, limit), 300, 30
                )
                for test in SELFTESTS:
                    runner.step(
                        test.name,
                        lambda r, limit, t=test: run_selftest(kt, t, args.runs, gpu, r, limit),  # type: ignore[misc]
                        # the first CUDA session may compile kernels for this card
                        args.selftest_s * (2 if test is SELFTESTS[0] else 1),
                        20,
                    )
                runner.step(
                    "bench-matrix",
                    lambda r, limit: bench_matrix(kt, r, limit, args.max_clip_s),
                    args.bench_s,
                    30,
                )
                levels = [int(n) for n in args.levels.split(",") if n]
                serve_s = len(levels) * (args.serve_s + 5) + 60
                for provider, precision in (("cuda", "fp32"), ("cpu", "int8")):
                    runner.step(
                        f"serve-{provider}-{precision}",
                        lambda r, limit, p=provider, q=precision: serve_load(  # type: ignore[misc]
                            kt, r, limit, p, q, levels, args.serve_s
                        ),
                        serve_s,
                        args.serve_s + 40,
                    )
    write_results(runner.steps, out, results, gpu, time.monotonic() - began)
    failed = [s.name for s in runner.steps if s.status in ("failed", "timeout")]
    return 4 if not complete else (1 if failed else 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    stash_cmd = commands.add_parser("stash", help="keep the carried part(s) for the last call")
    stash_cmd.add_argument("--probe", action="store_true", help="also print the GPU and Python")
    stash_cmd.add_argument("--parts", type=Path, default=kit.PARTS, help="the carried parts")
    run_cmd = commands.add_parser("run", help="stash, then install and run every check")
    run_cmd.add_argument("--budget-s", type=float, default=420, help="the whole run's limit")
    run_cmd.add_argument("--runs", type=int, default=5, help="self-test: warm runs")
    run_cmd.add_argument("--selftest-s", type=float, default=90, help="limit per self-test")
    run_cmd.add_argument("--bench-s", type=float, default=180, help="limit of bench --matrix")
    run_cmd.add_argument("--max-clip-s", type=float, default=10.0, help="bench: longest clip")
    run_cmd.add_argument("--levels", default="1,4,16", help="serve: concurrent clients")
    run_cmd.add_argument("--serve-s", type=float, default=15.0, help="serve: seconds per level")
    run_cmd.add_argument("--out", default=None, help="results folder (default: $OUT)")
    run_cmd.add_argument("--parts", type=Path, default=kit.PARTS, help="the carried parts")
    args = parser.parse_args(argv)
    if args.command == "stash":
        status = stash(args.parts)
        if args.probe:
            probe()
        return 0 if not status.get("bad") and not status.get("error") else 1
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
