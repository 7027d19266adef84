"""`voxtray selftest`: is the GPU really used? Checks, CPU vs GPU runs, verdict and fix."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from voxtray.choices import Precision, Provider
from voxtray.cli.args import MAX_GPU_INDEX, MAX_RUNS, add_choice, add_model_flag, int_range
from voxtray.cli.guard import print_json, repair_line
from voxtray.cli.models import installer, open_store

if TYPE_CHECKING:
    from voxtray.cli.args import Subcommands


def register(commands: Subcommands) -> None:
    selftest = commands.add_parser(
        "selftest",
        help="is the GPU really used? checks, CPU vs GPU runs, verdict and fix",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_choice(selftest, "--provider", Provider.AUTO)
    add_model_flag(selftest)
    add_choice(selftest, "--precision", Precision.AUTO)
    selftest.add_argument(
        "--runs", type=int_range(1, MAX_RUNS), default=5, help="warm runs per provider"
    )
    selftest.add_argument(
        "--gpu-index",
        type=int_range(0, MAX_GPU_INDEX),
        default=0,
        help="which NVIDIA card to test (0 = the first)",
    )
    selftest.add_argument("--json", action="store_true", help="print JSON")
    selftest.set_defaults(handler=_cmd_selftest)


def _cmd_selftest(args: argparse.Namespace) -> int:
    from voxtray.inference.assembly import ensure_installed
    from voxtray.inference.selftest import run_selftest

    store = open_store()
    name = args.model or store.catalog.default_stt
    model = ensure_installed(store, name, install=installer(store))
    report = run_selftest(
        model,
        args.provider,
        precision=args.precision,
        runs=args.runs,
        gpu_index=args.gpu_index,
        progress=lambda message: print(f"selftest: {message}", file=sys.stderr),
    )
    if args.json:
        data = report.to_json()
        if report.reinstall is not None:
            data["fix"] = repair_line(report.reinstall)
        print_json(data)
    else:
        print(report.text_report(repair_line))
    return int(report.exit_code)
