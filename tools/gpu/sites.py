"""The installed kit's interpreter and, per scenario, the library folders it sees: the
wheels with their own `nvidia` tree, a view of the machine's site-packages, and the
libraries a fault hides or breaks (also from the system loader, in a private mount
namespace)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.gpu.machine import PY, capture, machine_site_dirs
from tools.gpu.steps import Runner, Step

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
PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def is_ort(name: str) -> bool:
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
            if is_ort(entry.name) and not keep_ort:
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
                if scenario.gpu_ort or not is_ort(entry.name):
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
        listing = capture(["ldconfig", "-p"]) if shutil.which("ldconfig") else ""
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
