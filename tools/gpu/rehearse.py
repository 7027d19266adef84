"""Rehearse the GPU kit on this machine: prepare's parts through device-run, call by call,
in a clean Python 3.12 that stands in for the GPU machine's (no project venv).

    packaging/gpu/rehearse [--reduced] [--skip-prepare]

The stand-in is a `python3.12 -m venv` with only what the GPU machine has that the kit
relies on (numpy, onnx, the CPU onnxruntime, httpx, click, nvidia-ml-py). Each planned
call runs the way the device runner runs it: in a fresh copy of the checkout's tracked and
untracked-not-ignored files plus that call's carried paths, with `python3` the stand-in,
a fresh $OUT, and the stash kept between calls. Every GPU step must then answer "no GPU"
as the product does on a machine without one. Prints each call's and each step's time
and checks what $OUT holds against what comes back from a device call (at most 8 files,
16 MiB each, 2 folders deep, plain names).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tools.gpu import kit

# parts cut as for the full kit, so every call sends what the full kit's calls send
REDUCED_PREPARE = ["--clips", "4", "--xz-preset", "0"]
REDUCED_RUN = [
    "--runs",
    "1",
    "--levels",
    "1,4",
    "--serve-s",
    "3",
    "--selftest-s",
    "300",
    "--bench-s",
    "400",
    "--budget-s",
    "1500",
]
FULL_RUN = ["--selftest-s", "300", "--bench-s", "900", "--budget-s", "3000"]
OUT_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


def _say(message: str) -> None:
    print(f"rehearse: {message}", file=sys.stderr, flush=True)


def machine_python(folder: Path, py312: str) -> Path:
    """The stand-in for the GPU machine's interpreter, made once and kept."""
    python = folder / "bin" / "python3"
    marker = folder / "packages.txt"
    wanted = "\n".join(kit.MACHINE_PACKAGES)
    if python.is_file() and marker.is_file() and marker.read_text() == wanted:
        return python
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([py312, "-m", "venv", str(folder)], check=True)
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *kit.MACHINE_PACKAGES,
        ],
        check=True,
    )
    marker.write_text(wanted)
    return python


def device_tree(target: Path, files: list[kit.TreeFile], carry: list[str]) -> int:
    """The checkout as one call sends it; returns the bytes sent."""
    shutil.rmtree(target, ignore_errors=True)
    sent = 0
    for name in [*(entry.name for entry in files), *carry]:
        source, copy = kit.REPO / name, target / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():  # travels as a link
            copy.symlink_to(os.readlink(source))
        else:
            try:
                os.link(source, copy)
            except OSError:
                shutil.copy2(source, copy)
        sent += source.lstat().st_size
    return sent


def check_out_folder(out: Path) -> list[str]:
    """What would not come back from a device call."""
    problems = []
    files = [p for p in out.rglob("*") if p.is_file()]
    if len(files) > 8:
        problems.append(f"{len(files)} files in $OUT, at most 8 come back")
    for path in out.rglob("*"):
        rel = path.relative_to(out)
        if path.is_file() and path.stat().st_size > 16 * kit.MIB:
            problems.append(f"{rel} is over 16 MiB")
        if len(rel.parts) > 3:
            problems.append(f"{rel} is more than 2 folders down")
        if not all(OUT_NAME.match(part) for part in rel.parts):
            problems.append(f"{rel}: a name with other characters")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="4 clips, fast xz, short serve")
    parser.add_argument("--skip-prepare", action="store_true", help="use the parts as they are")
    parser.add_argument("--parts", type=Path, default=kit.PARTS, help="where prepare writes")
    parser.add_argument("--folder", type=Path, default=None, help="default: PARTS/rehearsal")
    parser.add_argument("--prepare-arg", action="append", default=[], help="passed to prepare")
    args = parser.parse_args(argv)
    args.parts = args.parts.resolve()
    args.folder = args.folder or args.parts / "rehearsal"
    py312 = kit.python312()
    if py312 is None:
        print("rehearse: no Python 3.12 here (set VOXTRAY_PY312)", file=sys.stderr)
        return 5
    timings: dict[str, Any] = {"python": py312}
    began = time.monotonic()
    machine = machine_python(args.folder / "machine", py312)
    timings["machine_python_s"] = round(time.monotonic() - began, 1)
    if not args.skip_prepare:
        began = time.monotonic()
        extra = (REDUCED_PREPARE if args.reduced else []) + ["--parts", str(args.parts)]
        extra += args.prepare_arg
        code = subprocess.run(
            ["bash", str(kit.ENTRY / "prepare"), *extra],
            env={**os.environ, "PYTHON": sys.executable},
            check=False,
        ).returncode
        timings["prepare_s"] = round(time.monotonic() - began, 1)
        _say(f"prepare exited {code} in {timings['prepare_s']} s")
        if code not in (0, 3):  # 3: built, but the plan does not fit the time budget
            return code
    plan = json.loads((args.parts / "plan.json").read_text(encoding="utf-8"))
    stash, work = args.folder / "stash", args.folder / "work"
    shutil.rmtree(stash, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        "PATH": f"{machine.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        kit.STASH_ENV: str(stash),
        kit.WORK_ENV: str(work),
    }
    files = kit.tree_files()
    timings["tree_bytes"] = kit.tree_bytes(files)
    calls = []
    problems: list[str] = []
    for call in plan["calls"]:
        tree, out = args.folder / "tree", args.folder / "out"
        sent = device_tree(tree, files, call["carry"])
        if sent > kit.CALL_BUDGET:
            limit = "the device runner refuses it" if sent > kit.CALL_LIMIT else "no margin"
            problems.append(f"call {call['call']} sends {sent:,} bytes, over 60 MiB ({limit})")
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        command = call["command"]
        if command.split()[2] == "run":
            command += " " + " ".join(REDUCED_RUN if args.reduced else FULL_RUN)
        _say(f"call {call['call']}: {command}")
        started = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", command], cwd=tree, env={**env, "OUT": str(out)}, check=False
        )
        seconds = round(time.monotonic() - started, 1)
        calls.append(
            {"call": call["call"], "bytes": sent, "seconds": seconds, "rc": done.returncode}
        )
        problems += [f"call {call['call']}: {p}" for p in check_out_folder(out)]
        if done.returncode not in (0, 1):
            problems.append(f"call {call['call']} exited {done.returncode}")
    summary = json.loads((args.folder / "out" / "summary.json").read_text(encoding="utf-8"))
    timings["calls"] = calls
    timings["steps"] = {
        s["name"]: [s["status"], s["seconds"], s["detail"]] for s in summary["steps"]
    }
    for step in summary["steps"]:
        if step["status"] in ("failed", "timeout", "skipped"):
            problems.append(f"step {step['name']}: {step['status']} {step['detail']}")
        elif step["name"].startswith(("selftest", "fallback")) and (
            step["result"].get("verdict") != "no-gpu"
        ):
            verdict = step["result"].get("verdict")
            problems.append(f"step {step['name']}: {verdict}, not no-gpu")
    timings["problems"] = problems
    kit.write_json(args.folder / "rehearsal.json", timings)
    rows = [f"{c['call']}: {c['bytes']:,} bytes {c['seconds']} s rc {c['rc']}" for c in calls]
    print("rehearsal: calls " + ", ".join(rows))
    for name, (status, seconds, detail) in timings["steps"].items():
        print(f"  {name:<30} {status:<8} {seconds:>7.1f} s  {detail}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print(f"rehearsal {'passed' if not problems else 'FAILED'}; {args.folder / 'rehearsal.json'}")
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
