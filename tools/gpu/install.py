"""Install the kit's wheels into a private folder and convert its models with voxtray's
own converter."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from tools.gpu.machine import PY
from tools.gpu.sites import Kit
from tools.gpu.steps import Step, json_in


def install(kt: Kit, record: Step, limit: float) -> None:
    shutil.rmtree(kt.site, ignore_errors=True)
    wheels = sorted(str(p) for p in (kt.root / "wheels").glob("*.whl"))
    argv = [
        PY,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        "--no-deps",
        "--no-compile",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--target",
        str(kt.site),
        *wheels,
    ]
    code = kt.runner.command("install", argv, dict(os.environ), limit)
    if code != 0:
        raise RuntimeError(f"pip install exited {code}; see install.log")
    record.result["wheels"] = [Path(w).name for w in wheels]


CONVERT = """
import json, shutil, sys, time
from pathlib import Path
from voxtray.models.convert import convert_whisper
source, target, prefix, manifest = map(Path, sys.argv[1:5])
target.mkdir(parents=True, exist_ok=True)
began = time.perf_counter()
convert_whisper(source, target, prefix.name, step=lambda m: print(m, file=sys.stderr, flush=True))
shutil.copy(manifest, target / "manifest.json")
print(json.dumps({"seconds": round(time.perf_counter() - began, 1)}))
"""


def convert_models(kt: Kit, record: Step, limit: float) -> None:
    began = time.monotonic()
    models = kt.home / "models"
    models.mkdir(parents=True, exist_ok=True)
    for name, entry in kt.info["models"].items():
        target = models / name
        shutil.rmtree(target, ignore_errors=True)
        manifest = kt.root / "manifests" / f"{name}.json"
        if not entry["convert"]:
            shutil.copytree(kt.root / "models" / name, target)
            shutil.copy(manifest, target / "manifest.json")
            continue
        argv = [
            *kt.python(),
            "-c",
            CONVERT,
            str(kt.root / "sources" / name),
            str(target),
            entry["prefix"],
            str(manifest),
        ]
        left = limit - (time.monotonic() - began)
        code = kt.runner.command(f"convert-{name}", argv, kt.env(), left)
        if code != 0:
            raise RuntimeError(f"converting {name} exited {code}")
    names = list(kt.info["models"])
    out = kt.runner.out / "models-verify.json"
    left = limit - (time.monotonic() - began)
    kt.runner.command(
        "models-verify",
        kt.voxtray("base", "models", "verify", *names, "--json"),
        kt.env(),
        left,
        out,
    )
    verified = json_in(out.read_text(encoding="utf-8") or "{}")
    record.result["verify"] = verified
    problems = json.dumps(verified)
    if '"ok": false' in problems:
        record.detail = (
            "converted, but not byte-identical to the conversion here: see models-verify"
        )
