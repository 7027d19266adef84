"""What the GPU kit's three scripts share: where things live, the part format, checksums,
what travels with every call.

The kit is one tar.xz of wheels, model sources and evaluation clips, split into parts that
each fit one call to a lent GPU machine: the device runner sends at most 64 MiB per call,
and every call also sends the checkout, so a part gets what the checkout leaves of 60 MiB.
`prepare` builds it here, `device-run` stashes the parts there call by call and runs the
checks, `rehearse` runs both on this machine. Standard library only: device-run imports
this on the GPU machine before anything is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENTRY = REPO / "packaging" / "gpu"  # the kit's entry scripts: prepare, device-run, rehearse
PARTS = ENTRY / "parts"  # git-ignored: the parts and SHA256SUMS travel as carried paths
SUMS = "SHA256SUMS"
KIT_NAME = "voxtray-gpu-kit.tar.xz"
PART_PREFIX = "part-"
MIB = 2**20
PART_LIMIT = 60 * MIB
CALL_LIMIT = 64 * MIB  # the device runner refuses a call that sends more
CALL_BUDGET = 60 * MIB  # what the kit lets one call send: part, SHA256SUMS and the checkout
MIN_PART = 16 * MIB  # below this the kit takes too many calls to fit a lent machine's time
SUMS_RESERVE = 8 * 1024  # SHA256SUMS for up to 99 parts
STASH_ENV = "VOXTRAY_GPU_STASH"
DEFAULT_STASH = "/var/tmp/voxtray-gpu-kit"  # noqa: S108  (outlives the call)
WORK_ENV = "VOXTRAY_GPU_WORK"
DEFAULT_WORK = "/var/tmp/voxtray-gpu-work"  # noqa: S108

# What the GPU machine has (numpy, onnx, httpx, click, h11, anyio, nvidia-ml-py, the CPU
# onnxruntime); the kit brings the rest of what selftest, bench and serve import, without
# PySide6, sounddevice or sherpa-onnx.
KIT_DEPS = (
    "soundfile",
    "cffi",
    "pycparser",
    "starlette",
    "uvicorn",
    "python-multipart",
    "platformdirs",
)
# What rehearse installs into the interpreter that stands in for the GPU machine's.
MACHINE_PACKAGES = (
    "numpy",
    "onnx",
    "onnxruntime==1.30.0",
    "httpx",
    "click",
    "nvidia-ml-py",
    "typing-extensions",
)
WHEEL_PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
)


@dataclass(frozen=True)
class TreeFile:
    name: str
    size: int
    tracked: bool


def _git_names(repo: Path, *args: str) -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [name for name in listed.split("\0") if name]


def _travels(path: Path) -> bool:
    """A file or a link (which travels as a link); a folder listed here is a nested
    repository, which travels without its files."""
    return path.is_symlink() or path.is_file()


def tree_files(repo: Path = REPO) -> list[TreeFile]:
    """What the device runner sends with every call besides the carried paths: tracked
    and untracked-not-ignored files, and shared/ where the checkout has one."""
    found: dict[str, TreeFile] = {}
    for args, tracked in ((("--cached",), True), (("--others", "--exclude-standard"), False)):
        for name in _git_names(repo, *args):
            path = repo / name
            if _travels(path):
                found[name] = TreeFile(name, path.lstat().st_size, tracked)
    shared = repo / "shared"
    if shared.is_dir() and not shared.is_symlink():
        for folder, _dirs, names in os.walk(shared):
            for file_name in names:
                path = Path(folder) / file_name
                name = path.relative_to(repo).as_posix()
                found.setdefault(name, TreeFile(name, path.lstat().st_size, False))
    return sorted(found.values(), key=lambda entry: entry.name)


def tree_bytes(files: list[TreeFile]) -> int:
    return sum(entry.size for entry in files)


def part_room(checkout_bytes: int) -> int:
    """The largest part one call can carry beside SHA256SUMS and the checkout."""
    return CALL_BUDGET - checkout_bytes - SUMS_RESERVE


def biggest(files: list[TreeFile], count: int = 5) -> str:
    top = sorted(files, key=lambda entry: entry.size, reverse=True)[:count]
    return ", ".join(f"{e.name} ({e.size:,}{'' if e.tracked else ', untracked'})" for e in top)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def part_name(index: int) -> str:
    return f"{PART_PREFIX}{index}"


def read_sums(path: Path) -> dict[str, str]:
    """SHA256SUMS as {file name: sha256}; its `# kit ...` line is kept under "#kit"."""
    sums: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# kit "):
            sums["#kit"] = line.removeprefix("# kit ").strip()
        elif line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            sums[name.strip().lstrip("*")] = digest
    return sums


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def python312() -> str | None:
    """A Python 3.12 interpreter: $VOXTRAY_PY312, python3.12 on PATH, or pyenv's."""
    candidates = [os.environ.get("VOXTRAY_PY312", ""), "python3.12"]
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False)
        versions = Path(root.stdout.strip()) / "versions"
        candidates += [str(p / "bin" / "python3.12") for p in sorted(versions.glob("3.12*"))]
    for candidate in filter(None, candidates):
        try:
            found = subprocess.run(
                [candidate, "-c", "import sys; print(sys.executable, sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if found.returncode == 0 and found.stdout.strip().endswith("(3, 12)"):
            return found.stdout.split()[0]
    return None
