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
import contextlib
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit

PY = sys.executable
SITES_PTH = (
    'import os, site; [site.addsitedir(p) for p in os.environ.get("VOXTRAY_KIT_SITES", "")'
    ".split(os.pathsep) if p]\n"
)
LAUNCH = """import os, runpy, site, sys
for folder in os.environ.get("VOXTRAY_KIT_SITES", "").split(os.pathsep):
    if folder:
        site.addsitedir(folder)
flag, target, *rest = sys.argv[1:]
sys.argv = [flag, *rest] if flag == "-c" else [target, *rest]
if flag == "-c":
    exec(compile(target, "<kit>", "exec"), {"__name__": "__main__"})
else:
    runpy.run_module(target, run_name="__main__", alter_sys=True)
"""
GARBAGE = b"not a shared library: made unloadable by the voxtray GPU kit\n"
PACKAGING_RESERVE_S = 15
PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def _say(message: str) -> None:
    print(f"device-run: {message}", file=sys.stderr, flush=True)


def _stash_dir() -> Path:
    return Path(os.environ.get(kit.STASH_ENV, kit.DEFAULT_STASH))


def _work_dir() -> Path:
    return Path(os.environ.get(kit.WORK_ENV, kit.DEFAULT_WORK))


# --- stash ---------------------------------------------------------------------------------


def stash(parts: Path = kit.PARTS) -> dict[str, Any]:
    """Copy the carried parts that match SHA256SUMS into the stash; say which are there."""
    target = _stash_dir()
    carried_sums = parts / kit.SUMS
    if not carried_sums.is_file():
        return {"error": f"{carried_sums} was not carried", "have": [], "missing": []}
    sums = kit.read_sums(carried_sums)
    kit_line = sums.pop("#kit")
    old = target / kit.SUMS
    if old.is_file() and kit.read_sums(old).get("#kit") != kit_line:
        _say("the stash holds another kit: emptied")
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


def probe() -> dict[str, Any]:
    """A few quick facts, printed at once: the first call shows what the machine is."""
    facts: dict[str, Any] = {"python": sys.version.split()[0], "executable": PY}
    smi = shutil.which("nvidia-smi")
    if smi:
        query = "name,driver_version,memory.total,compute_cap"
        facts["nvidia_smi"] = _capture([smi, f"--query-gpu={query}", "--format=csv,noheader"])
    else:
        facts["nvidia_smi"] = "nvidia-smi not found"
    facts["onnxruntime_here"] = _capture(
        [PY, "-c", "import onnxruntime as o; print(o.__version__, o.get_available_providers())"]
    )
    print("probe: " + json.dumps(facts), flush=True)
    return facts


def _capture(command: list[str], timeout: float = 60) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    return (done.stdout + done.stderr).strip()


# --- steps ---------------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    status: str = "not run"  # ok, failed, timeout, skipped
    seconds: float = 0.0
    detail: str = ""
    result: dict[str, Any] = field(default_factory=dict)


class Runner:
    """Runs steps inside one overall deadline, each with its own limit."""

    def __init__(self, budget_s: float, out: Path) -> None:
        self.deadline = time.monotonic() + budget_s
        self.out = out
        self.steps: list[Step] = []

    def left(self) -> float:
        return self.deadline - time.monotonic() - PACKAGING_RESERVE_S

    def step(
        self, name: str, action: Callable[[Step, float], None], limit_s: float, need_s: float = 5
    ) -> Step:
        record = Step(name)
        self.steps.append(record)
        left = self.left()
        if left < need_s:
            record.status, record.detail = "skipped", f"budget: {left:.0f} s left"
            _say(f"{name}: skipped ({record.detail})")
            return record
        _say(f"{name}: start")
        began = time.monotonic()
        try:
            action(record, min(limit_s, left))
            if record.status == "not run":
                record.status = "ok"
        except subprocess.TimeoutExpired as exc:
            record.status, record.detail = "timeout", f"stopped after {exc.timeout:.0f} s"
        except Exception as exc:  # one step's failure never stops the others
            record.status = "failed"
            record.detail = record.detail or f"{type(exc).__name__}: {exc}"
        record.seconds = round(time.monotonic() - began, 1)
        _say(f"{name}: {record.status} in {record.seconds} s {record.detail}".rstrip())
        return record

    def command(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        timeout: float,
        stdout: Path | None = None,
    ) -> int:
        """Run `argv` in its own process group; stderr to out/<name>.log."""
        log = self.out / f"{name}.log"
        out = stdout or self.out / f"{name}.out"
        with log.open("ab") as err, out.open("wb") as std:
            err.write(f"$ {' '.join(argv)}\n".encode())
            err.flush()
            process = subprocess.Popen(
                argv, stdout=std, stderr=err, env=env, start_new_session=True, cwd=self.out
            )
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill(process)
                raise


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# --- the kit's interpreter and the scenarios' library folders ---------------------------------


def machine_site_dirs() -> list[Path]:
    code = "import json, site; print(json.dumps(site.getsitepackages()))"
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    return [Path(p) for p in json.loads(done.stdout) if Path(p).is_dir()]


def _is_ort(name: str) -> bool:
    return name == "onnxruntime" or name.lower().startswith(("onnxruntime-", "onnxruntime_"))


def make_view(target: Path, sources: list[Path], keep_ort: bool) -> Path:
    """Links to the machine's site-packages, less `nvidia` (each scenario brings its own
    copy next to onnxruntime, where onnxruntime.preload_dlls() looks) and, unless
    `keep_ort`, less the machine's CPU onnxruntime (whose metadata would otherwise make two
    onnxruntime packages seem installed together)."""
    target.mkdir(parents=True)
    for source in sources:
        for entry in source.iterdir():
            if entry.name == "nvidia" and not keep_ort:
                continue
            if _is_ort(entry.name) and not keep_ort:
                continue
            link = target / entry.name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(entry)
    return target


def _affected(folder: Path, pattern: re.Pattern[str]) -> bool:
    return any(pattern.search(name) for _, _, names in os.walk(folder) for name in names)


def shadow_tree(
    source: Path, target: Path, pattern: re.Pattern[str] | None, action: str = "hide"
) -> None:
    """Links mirroring `source`, except files matching `pattern`: left out ("hide") or
    replaced by a file that is not a library ("break"). Only the folders on the way to a
    matching file are real; the rest are links."""
    if pattern is None or not _affected(source, pattern):
        target.symlink_to(source)
        return
    target.mkdir()
    for entry in source.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shadow_tree(entry, target / entry.name, pattern, action)
        elif pattern.search(entry.name):
            if action == "break":
                (target / entry.name).write_bytes(GARBAGE)
        else:
            (target / entry.name).symlink_to(entry)


@dataclass(frozen=True)
class Scenario:
    name: str
    pattern: str | None = None  # libraries hidden or broken
    action: str = "hide"
    gpu_ort: bool = True  # False: the machine's own CPU onnxruntime instead
    env: tuple[tuple[str, str], ...] = ()


SCENARIOS = {
    "base": Scenario("base"),
    "cudnn-unloadable": Scenario("cudnn-unloadable", r"^libcudnn\.so", "break"),
    "cublas-hidden": Scenario("cublas-hidden", r"^libcublas(Lt)?\.so"),
    "cpu-onnxruntime": Scenario("cpu-onnxruntime", gpu_ort=False),
    "no-visible-devices": Scenario("no-visible-devices", env=(("CUDA_VISIBLE_DEVICES", ""),)),
}


class Kit:
    """The installed kit on this machine: its venv, site folders and model home."""

    def __init__(self, work: Path, runner: Runner) -> None:
        self.work = work
        self.runner = runner
        self.root = work / "kit"
        self.site = work / "site"
        self.home = work / "home"
        self.venv_python = work / "venv" / "bin" / "python"
        self.info: dict[str, Any] = {}
        self.sites: dict[str, list[Path]] = {}
        self.wrappers: dict[str, list[str]] = {}

    def env(self, scenario: str = "base") -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
        }
        env.update(
            VOXTRAY_HOME=str(self.home),
            VOXTRAY_KIT_SITES=os.pathsep.join(str(p) for p in self.sites[scenario]),
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            LANG="C.UTF-8",
        )
        env.update(SCENARIOS[scenario].env)
        return env

    def python(self, scenario: str = "base") -> list[str]:
        """The kit's interpreter: the venv's, or the machine's without its site-packages
        where no venv could be made; inside the scenario's mount namespace if it has one."""
        wrapper = self.wrappers.get(scenario, [])
        if self.venv_python.is_file():
            return [*wrapper, str(self.venv_python)]
        return [*wrapper, PY, "-S", str(self.work / "launch.py")]

    def voxtray(self, scenario: str, *args: str) -> list[str]:
        return [*self.python(scenario), "-m", "voxtray", *args]

    def build_sites(self, record: Step) -> None:
        """One venv; per scenario, a site folder of links to the installed wheels with its
        own `nvidia` tree, and a view of the machine's site-packages."""
        sources = machine_site_dirs()
        portions = [s / "nvidia" for s in sources if (s / "nvidia").is_dir()]
        views = self.work / "views"
        shutil.rmtree(views, ignore_errors=True)
        plain = make_view(views / "plain", sources, keep_ort=False)
        whole = make_view(views / "whole", sources, keep_ort=True)
        for scenario in SCENARIOS.values():
            folder = self.work / "sites" / scenario.name
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            for entry in self.site.iterdir():
                if scenario.gpu_ort or not _is_ort(entry.name):
                    (folder / entry.name).symlink_to(entry)
            if scenario.gpu_ort and portions:
                (folder / "nvidia").mkdir()
                pattern = re.compile(scenario.pattern) if scenario.pattern else None
                for portion in portions:
                    for sub in portion.iterdir():
                        if not (folder / "nvidia" / sub.name).exists():
                            shadow_tree(sub, folder / "nvidia" / sub.name, pattern, scenario.action)
            self.sites[scenario.name] = [folder, plain if scenario.gpu_ort else whole]
            if scenario.pattern:
                self.wrappers[scenario.name] = self.loader_hiding(scenario, record)
        record.result["machine_site_packages"] = [str(s) for s in sources]
        record.result["nvidia_portions"] = [str(p) for p in portions]
        shutil.rmtree(self.work / "venv", ignore_errors=True)
        (self.work / "launch.py").write_text(LAUNCH, encoding="utf-8")
        venv = [PY, "-m", "venv", "--without-pip", str(self.work / "venv")]
        if os.environ.get("VOXTRAY_KIT_NO_VENV"):  # to rehearse the fallback
            venv = [PY, "-c", "raise SystemExit('VOXTRAY_KIT_NO_VENV is set')"]
        made = subprocess.run(
            venv,
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0:
            shutil.rmtree(self.work / "venv", ignore_errors=True)
            record.detail = f"no venv ({made.stderr.strip()[-200:]}): python -S and launch.py"
            return
        purelib = subprocess.run(
            [str(self.venv_python), "-c", PURELIB],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        (Path(purelib) / "voxtray_kit_sites.pth").write_text(SITES_PTH, encoding="utf-8")

    def loader_hiding(self, scenario: Scenario, record: Step) -> list[str]:
        """The same libraries where the system's loader finds them (ldconfig's cache,
        LD_LIBRARY_PATH), hidden or broken inside a private mount namespace; [] when
        there are none."""
        assert scenario.pattern is not None
        pattern = re.compile(scenario.pattern)
        folders: set[str] = set()
        listing = _capture(["ldconfig", "-p"]) if shutil.which("ldconfig") else ""
        for line in listing.splitlines():
            if "=>" in line and pattern.search(line.split()[0]):
                folders.add(os.path.realpath(os.path.dirname(line.split("=>")[1].strip())))
        for folder in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
            if (
                folder
                and Path(folder).is_dir()
                and any(pattern.search(n) for n in os.listdir(folder))
            ):
                folders.add(os.path.realpath(folder))
        notes = record.result.setdefault("loader_hiding", {})
        if not folders:
            notes[scenario.name] = "none needed: the system loader has no such library"
            return []
        unshare = shutil.which("unshare")
        if os.geteuid() != 0 or unshare is None:
            notes[scenario.name] = f"NOT induced in {sorted(folders)}: needs root and unshare"
            return []
        base = self.work / "hide" / scenario.name
        shutil.rmtree(base, ignore_errors=True)
        lines = ["set -e"]
        for n, folder in enumerate(sorted(folders)):
            original, shadow = base / f"orig{n}", base / f"shadow{n}"
            original.mkdir(parents=True)
            shadow.mkdir()
            for name in os.listdir(folder):
                if pattern.search(name):
                    if scenario.action == "break":
                        (shadow / name).write_bytes(GARBAGE)
                else:
                    (shadow / name).symlink_to(original / name)
            lines += [
                f"mount --bind '{folder}' '{original}'",
                f"mount --bind '{shadow}' '{folder}'",
            ]
        lines.append('exec "$@"')
        script = base / "hide.sh"
        script.write_text("\n".join(lines) + "\n", encoding="utf-8")
        notes[scenario.name] = (
            f"{scenario.action} also in {sorted(folders)} (private mount namespace)"
        )
        return [unshare, "--mount", "--propagation", "private", "sh", str(script)]


# --- the run -------------------------------------------------------------------------------


def join_and_extract(kit_root_parent: Path, record: Step) -> None:
    target = _stash_dir()
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
    verified = _json_in(out.read_text(encoding="utf-8") or "{}")
    record.result["verify"] = verified
    problems = json.dumps(verified)
    if '"ok": false' in problems:
        record.detail = (
            "converted, but not byte-identical to the conversion here: see models-verify"
        )


@dataclass(frozen=True)
class SelfTest:
    name: str
    scenario: str
    provider: str
    precision: str
    expect: Callable[[dict[str, Any]], tuple[bool, str]]


def _has(report: dict[str, Any], key: str, *words: str) -> bool:
    text = json.dumps(report.get(key) or "").lower() + json.dumps(report.get("fixes") or "").lower()
    return all(word.lower() in text for word in words)


def _verdict_in(*verdicts: str) -> Callable[[dict[str, Any]], tuple[bool, str]]:
    def check(report: dict[str, Any]) -> tuple[bool, str]:
        ok = report.get("verdict") in verdicts
        return ok, f"verdict {' or '.join(verdicts)}"

    return check


def _fallback(
    cause: tuple[str, ...], fix: tuple[str, ...]
) -> Callable[[dict[str, Any]], tuple[bool, str]]:
    def check(report: dict[str, Any]) -> tuple[bool, str]:
        ok = (
            report.get("verdict") == "cpu-fallback"
            and _has(report, "cause", *cause)
            and _has(report, "fix", *fix)
        )
        return ok, f"cpu-fallback, cause naming {cause}, fix naming {fix}"

    return check


def _tensorrt_fallback(report: dict[str, Any]) -> tuple[bool, str]:
    """Without TensorRT, onnxruntime runs the model on the next provider asked for, CUDA:
    the report must say which one ran, not that the CPU did."""
    ok, wanted = _fallback(("tensorrt",), ("tensorrt-cu13-libs",))(report)
    ran = (report.get("gpu") or {}).get("provider")
    honest = ran == "cpu" or "the CPU ran it" not in str(report.get("summary"))
    return ok and honest, wanted + f", a summary that names what ran ({ran})"


SLOWER = "gpu-slower-than-cpu"
UNINSTALL = "pip uninstall -y onnxruntime onnxruntime-gpu"
SELFTESTS = (
    SelfTest("selftest-fp32-cuda", "base", "cuda", "fp32", _verdict_in("gpu-ok")),
    SelfTest("selftest-int8-cuda", "base", "cuda", "int8", _verdict_in("gpu-ok", SLOWER)),
    SelfTest(
        "selftest-fp32-tensorrt",
        "base",
        "tensorrt",
        "fp32",
        _tensorrt_fallback,
    ),
    SelfTest(
        "fallback-cudnn-unloadable",
        "cudnn-unloadable",
        "cuda",
        "fp32",
        _fallback(("cudnn",), ("nvidia-cudnn-cu13",)),
    ),
    SelfTest(
        "fallback-cublas-hidden",
        "cublas-hidden",
        "cuda",
        "fp32",
        _fallback(("cublas",), ("nvidia-cublas",)),
    ),
    SelfTest(
        "fallback-cpu-onnxruntime",
        "cpu-onnxruntime",
        "cuda",
        "fp32",
        _fallback(("CPU-only onnxruntime",), (UNINSTALL,)),
    ),
    SelfTest(
        "fallback-no-visible-devices",
        "no-visible-devices",
        "cuda",
        "fp32",
        _fallback(("CUDA_VISIBLE_DEVICES",), ("CUDA_VISIBLE_DEVICES",)),
    ),
)


def selftest_facts(report: dict[str, Any]) -> dict[str, Any]:
    """The figures and words the summary keeps from one self-test report."""
    diagnosis = report.get("diagnosis") or {}
    gpus = diagnosis.get("gpus") or []
    gpu = report.get("gpu") or {}
    cpu = report.get("cpu") or {}
    return {
        "verdict": report.get("verdict"),
        "summary": report.get("summary"),
        "cause": report.get("cause"),
        "fix": report.get("fix"),
        "fixes": report.get("fixes"),
        "ran_on": gpu.get("provider"),
        "gpu": gpus[0] if gpus else None,
        "driver": (diagnosis.get("driver") or {}).get("detail"),
        "onnxruntime": (diagnosis.get("onnxruntime") or {}).get("detail"),
        "speedup": report.get("speedup"),
        "cpu_cold_ms": cpu.get("cold_ms"),
        "cpu_warm_ms": cpu.get("warm_ms"),
        "gpu_cold_ms": gpu.get("cold_ms"),
        "gpu_warm_ms": gpu.get("warm_ms"),
        "gpu_memory": report.get("gpu_memory"),
        "placement": diagnosis.get("placement"),
        "notes": report.get("notes"),
        "texts_agree": report.get("texts_agree"),
    }


def _json_in(text: str) -> dict[str, Any]:
    """The JSON object a command printed, also when a library printed a line before it."""
    try:
        return dict(json.loads(text))
    except ValueError:
        start = text.index("\n{") + 1 if not text.startswith("{") else 0
        return dict(json.JSONDecoder().raw_decode(text[start:])[0])


def run_selftest(kt: Kit, test: SelfTest, runs: int, gpu: bool, record: Step, limit: float) -> None:
    out = kt.runner.out / f"{test.name}.json"
    argv = kt.voxtray(
        test.scenario,
        "selftest",
        "--model",
        kt.info["whisper_models"][0],
        "--provider",
        test.provider,
        "--precision",
        test.precision,
        "--runs",
        str(runs),
        "--json",
    )
    code = kt.runner.command(test.name, argv, kt.env(test.scenario), limit, out)
    text = out.read_text(encoding="utf-8")
    if not text.strip():
        raise RuntimeError(f"exit {code}, no report; see {test.name}.log")
    report = _json_in(text)
    facts = selftest_facts(report)
    facts["exit_code"] = code
    met, wanted = test.expect(report) if gpu else (report.get("verdict") == "no-gpu", "no-gpu")
    facts["expected"], facts["as_expected"] = wanted, met
    record.result = facts
    record.detail = f"{facts['verdict']}" + ("" if met else f" (expected {wanted})")


def bench_matrix(kt: Kit, record: Step, limit: float, max_clip_s: float) -> None:
    out = kt.runner.out / "matrix.json"
    manifest = kt.root / "eval" / "manifest.tsv"
    argv = kt.voxtray(
        "base",
        "bench",
        "--matrix",
        "--manifest",
        str(manifest),
        "--models",
        ",".join(kt.info["whisper_models"]),
        "--precisions",
        "fp32,int8",
        "--providers",
        "cpu,cuda",
        "--max-clip-s",
        str(max_clip_s),
        "--json",
        str(out),
    )
    code = kt.runner.command("bench-matrix", argv, kt.env(), limit)
    if code != 0 or not out.is_file():
        raise RuntimeError(f"exit {code}; see bench-matrix.log")
    report = json.loads(out.read_text(encoding="utf-8"))
    record.result = {"clips": report.get("clips"), "cells": report.get("matrix")}


def _clips(root: Path, low: float, high: float) -> list[tuple[str, bytes]]:
    with (root / "eval" / "manifest.tsv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    chosen = [r for r in rows if low <= float(r["duration_s"]) <= high] or rows[:3]
    return [(r["id"], (root / "eval" / r["wav"]).read_bytes()) for r in chosen]


def _gpu_memory_of(pid: int) -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    rows = _capture([smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader"], 20)
    return next((row for row in rows.splitlines() if row.split(",")[0].strip() == str(pid)), rows)


def serve_load(
    kt: Kit,
    record: Step,
    limit: float,
    provider: str,
    precision: str,
    levels: list[int],
    seconds: float,
) -> None:
    """`voxtray serve` on `provider` under each number of concurrent clients, one request
    per encoder call (the server does not batch requests)."""
    sys.path.insert(0, str(kit.REPO / "packaging"))
    import bench_serve  # the load generator docs/serve.md's figures came from

    began = time.monotonic()
    port = bench_serve.free_port()
    name = f"serve-{provider}-{precision}"
    log = kt.runner.out / f"{name}.log"
    argv = kt.voxtray(
        "base",
        "serve",
        "--port",
        str(port),
        "--no-auth",
        "--model",
        kt.info["whisper_models"][0],
        "--provider",
        provider,
        "--precision",
        precision,
        "--threads",
        "2",
        "--max-queue",
        "64",
    )
    with log.open("wb") as err:
        server = subprocess.Popen(
            argv, stdout=err, stderr=err, env=kt.env(), start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    levels_done: list[dict[str, Any]] = []
    record.result = {
        "provider_asked": provider,
        "precision": precision,
        "levels": levels_done,
        "batching": "none: one request per encoder call",
    }
    try:
        while "listening on" not in log.read_text(errors="replace"):
            if server.poll() is not None:
                raise RuntimeError(f"server exited {server.returncode}; see {name}.log")
            if time.monotonic() - began > limit / 2:
                raise subprocess.TimeoutExpired(argv, limit / 2)
            time.sleep(0.3)
        audio = _clips(kt.root, 4.8, 6.0)
        bench_serve.load(url, audio, 1, 60, budget=3)  # warm-up
        import httpx

        record.result["health"] = httpx.get(url + "/health", timeout=30).json()
        record.result["clips"] = [n for n, _ in audio]
        for clients in levels:
            if limit - (time.monotonic() - began) < seconds + 10:
                record.detail = f"stopped before {clients} clients: time"
                break
            row = bench_serve.load(url, audio, clients, seconds)
            row["gpu_memory"] = _gpu_memory_of(server.pid)
            levels_done.append(row)
            _say(f"{name}: {json.dumps(row)}")
        record.result["health_after"] = httpx.get(url + "/health", timeout=30).json()
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            _kill(server)  # type: ignore[arg-type]


def environment(record: Step, out: Path) -> None:
    facts = probe()
    smi = shutil.which("nvidia-smi")
    lines = [f"$ {PY} -m pip list", _capture([PY, "-m", "pip", "list"], 120)]
    if smi:
        lines += ["$ nvidia-smi", _capture([smi], 60)]
    if shutil.which("ldconfig"):
        found = [
            line.strip()
            for line in _capture(["ldconfig", "-p"]).splitlines()
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


# --- the report ----------------------------------------------------------------------------


def summary_text(steps: list[Step], gpu: bool, total_s: float) -> str:
    lines = [
        f"voxtray GPU kit: {'a GPU was found' if gpu else 'no GPU on this machine'}; "
        f"{total_s:.0f} s"
    ]
    for step in steps:
        lines.append(f"{step.name:<30} {step.status:<8} {step.seconds:>6.1f} s  {step.detail}")
    figures = [s for s in steps if s.name.startswith(("selftest", "fallback")) and s.result]
    first = next((s.result for s in figures if s.result.get("gpu")), None)
    if first is not None:
        card = first["gpu"]
        lines.append(
            f"card: {card.get('name')}, {card.get('memory_total_mb')} MiB, compute capability "
            f"{card.get('compute_capability')}; {first.get('driver')}; {first.get('onnxruntime')}"
        )
    for step in figures:
        r = step.result
        gpu_name = (r.get("gpu") or {}).get("name")
        memory = r.get("gpu_memory") or {}
        lines.append(
            f"  {step.name}: {r['verdict']} on {r.get('ran_on')}; speedup {r.get('speedup')}; "
            f"cpu {r.get('cpu_cold_ms')}/{r.get('cpu_warm_ms')} ms, "
            f"gpu {r.get('gpu_cold_ms')}/{r.get('gpu_warm_ms')} ms (cold/warm); "
            f"GPU {gpu_name or '-'}, {memory.get('process_mb', '-')} of "
            f"{memory.get('total_mb', '-')} MiB; as expected: {r.get('as_expected')}"
        )
        if r.get("cause"):
            lines.append(f"    cause: {r['cause']}")
        if r.get("fix"):
            lines.append(f"    fix: {r['fix']}")
    int8 = next((s.result for s in steps if s.name == "selftest-int8-cuda" and s.result), None)
    fp32 = next((s.result for s in steps if s.name == "selftest-fp32-cuda" and s.result), None)
    if int8 and fp32 and int8.get("gpu_warm_ms") and fp32.get("gpu_warm_ms"):
        lines.append(
            f"  int8 on cuda: {int8['gpu_warm_ms'] / fp32['gpu_warm_ms']:.2f}x fp32 on cuda, "
            f"{int8['gpu_warm_ms'] / int8['cpu_warm_ms']:.2f}x int8 on the CPU (warm); "
            f"placement {json.dumps(int8.get('placement'))}"
        )
    for step in steps:
        if step.name == "bench-matrix" and step.result.get("cells"):
            for c in step.result["cells"]:
                lines.append(
                    f"  {c['model']} {c['precision']} {c['requested']}->{c['provider']}: "
                    f"cold {c['cold_ms']} ms warm {c['warm_ms']} ms RTF {c['rtf']} "
                    f"WER {c['wer']} broken {c['broken']}"
                )
        if step.name.startswith("serve-"):
            for row in step.result.get("levels", []):
                lines.append(
                    f"  {step.name} {row['clients']:>2} clients: {row['requests_per_s']} req/s, "
                    f"p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, {row['statuses']}, "
                    f"GPU memory {row.get('gpu_memory')}"
                )
    return "\n".join(lines) + "\n"


def write_results(steps: list[Step], out: Path, results: Path, gpu: bool, total_s: float) -> None:
    data = {
        "gpu": gpu,
        "total_s": round(total_s, 1),
        "steps": [step.__dict__ for step in steps],
    }
    kit.write_json(results / "summary.json", data)
    text = summary_text(steps, gpu, total_s)
    (results / "summary.txt").write_text(text, encoding="utf-8")
    with tarfile.open(results / "results.tar.xz", "w:xz") as tar:
        tar.add(out, arcname="results")
    print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    work = _work_dir()
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
