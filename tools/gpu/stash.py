"""The kit's parts: kept call by call in a stash outside the checkout, then joined and
unpacked by the last call."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

from tools.gpu import kit
from tools.gpu.steps import Step, say


def stash_dir() -> Path:
    return Path(os.environ.get(kit.STASH_ENV, kit.DEFAULT_STASH))


def work_dir() -> Path:
    return Path(os.environ.get(kit.WORK_ENV, kit.DEFAULT_WORK))


def stash(parts: Path = kit.PARTS) -> dict[str, Any]:
    """Copy the carried parts that match SHA256SUMS into the stash; say which are there."""
    target = stash_dir()
    carried_sums = parts / kit.SUMS
    if not carried_sums.is_file():
        return {"error": f"{carried_sums} was not carried", "have": [], "missing": []}
    sums = kit.read_sums(carried_sums)
    kit_line = sums.pop("#kit")
    old = target / kit.SUMS
    if old.is_file() and kit.read_sums(old).get("#kit") != kit_line:
        say("the stash holds another kit: emptied")
        shutil.rmtree(target)
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(carried_sums, old)
    bad = []
    for name, digest in sums.items():
        carried = parts / name
        kept = target / name
        if kept.is_file() and kept.stat().st_size and kit.sha256(kept) == digest:
            continue
        if carried.is_file():
            if kit.sha256(carried) == digest:
                shutil.copy2(carried, kept)
            else:
                bad.append(name)
    have = sorted((n for n in sums if (target / n).is_file()), key=_part_number)
    missing = sorted((n for n in sums if n not in have), key=_part_number)
    status = {"kit": kit_line, "stash": str(target), "have": have, "missing": missing, "bad": bad}
    print("stash: " + json.dumps(status), flush=True)
    return status


def _part_number(name: str) -> int:
    return int(name.removeprefix(kit.PART_PREFIX))


def join_and_extract(kit_root_parent: Path, record: Step) -> None:
    target = stash_dir()
    sums = kit.read_sums(target / kit.SUMS)
    kit_sha, kit_size, count = sums.pop("#kit").split()
    joined = kit_root_parent / kit.KIT_NAME
    with joined.open("wb") as out:
        for name in sorted(sums, key=_part_number):
            with (target / name).open("rb") as part:
                shutil.copyfileobj(part, out, kit.MIB)
    if kit.sha256(joined) != kit_sha:
        raise RuntimeError("the joined kit does not match its sha256")
    shutil.rmtree(kit_root_parent / "kit", ignore_errors=True)
    with tarfile.open(joined, "r:xz") as tar:
        tar.extractall(kit_root_parent, filter="data")
    joined.unlink()
    record.result = {"kit_sha256": kit_sha, "bytes": int(kit_size), "parts": int(count)}
