"""What the GPU machine is: its interpreter, card, libraries and site-packages."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tools.gpu.steps import Step

PY = sys.executable


def probe() -> dict[str, Any]:
    """A few quick facts, printed at once: the first call shows what the machine is."""
    facts: dict[str, Any] = {"python": sys.version.split()[0], "executable": PY}
    smi = shutil.which("nvidia-smi")
    if smi:
        query = "name,driver_version,memory.total,compute_cap"
        facts["nvidia_smi"] = capture([smi, f"--query-gpu={query}", "--format=csv,noheader"])
    else:
        facts["nvidia_smi"] = "nvidia-smi not found"
    facts["onnxruntime_here"] = capture(
        [PY, "-c", "import onnxruntime as o; print(o.__version__, o.get_available_providers())"]
    )
    print("probe: " + json.dumps(facts), flush=True)
    return facts


def capture(command: list[str], timeout: float = 60) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    return (done.stdout + done.stderr).strip()


def machine_site_dirs() -> list[Path]:
    code = "import json, site; print(json.dumps(site.getsitepackages()))"
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    return [Path(p) for p in json.loads(done.stdout) if Path(p).is_dir()]


def environment(record: Step, out: Path) -> None:
    facts = probe()
    smi = shutil.which("nvidia-smi")
    lines = [f"$ {PY} -m pip list", capture([PY, "-m", "pip", "list"], 120)]
    if smi:
        lines += ["$ nvidia-smi", capture([smi], 60)]
    if shutil.which("ldconfig"):
        found = [
            line.strip()
            for line in capture(["ldconfig", "-p"]).splitlines()
            if re.search(r"cublas|cudnn|cudart|nvinfer|libcuda\.|nvidia-ml", line)
        ]
        facts["system_loader"] = found
    facts["uname"] = " ".join(os.uname())
    facts["ld_library_path"] = os.environ.get("LD_LIBRARY_PATH", "")
    facts["cpus"] = os.cpu_count()
    (out / "environment.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    record.result = facts


def gpu_present() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    return subprocess.run([smi, "-L"], capture_output=True, check=False).returncode == 0
