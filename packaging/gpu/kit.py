"""What the GPU kit's three scripts share: where things live, the part format, checksums.

The kit is one tar.xz of wheels, model sources and evaluation clips, split into parts that
each fit one call to a lent GPU machine (64 MiB per call, the repository's own files
included). `prepare` builds it here, `device-run` stashes the parts there call by call and
runs the checks, `rehearse` runs both on this machine. Standard library only: device-run
imports this on the GPU machine before anything is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PARTS = HERE / "parts"  # git-ignored: the parts and SHA256SUMS travel as carried paths
SUMS = "SHA256SUMS"
KIT_NAME = "voxtray-gpu-kit.tar.xz"
PART_PREFIX = "part-"
MIB = 2**20
PART_LIMIT = 60 * MIB
CALL_LIMIT = 64 * MIB
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
