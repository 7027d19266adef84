"""The PyInstaller bundle dist/voxtray/ (packaging/build.sh) on its own, as on a machine
without Python: a minimal environment, no venv on PATH or PYTHONPATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.audio import REPO, clip_path
from tests.support.process import run_voxtray
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from voxtray import __version__
from voxtray.models.catalog import load_catalog

pytestmark = [pytest.mark.slow, pytest.mark.bundle]

BUNDLE_DIR = REPO / "dist" / "voxtray"
BUNDLE = BUNDLE_DIR / "voxtray"
CLIP = clip_path("harvard_sb_example1")
VENV = REPO / ".venv"


def _store() -> Path:
    # The test suite's installed models (tests/conftest.py keeps them between runs).
    home = os.environ.get("VOXTRAY_TEST_HOME", str(Path.home() / ".cache" / "voxtray-test"))
    return Path(home) / "models"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if not BUNDLE.is_file():
        pytest.skip(f"no bundle at {BUNDLE}: run packaging/build.sh first")
    store = _store()
    if not store.is_dir():
        pytest.skip(f"no installed models at {store}: run packaging/dev.sh test once")
    home = tmp_path_factory.mktemp("bundle-home")
    (home / "models").symlink_to(store, target_is_directory=True)
    # Like `env -i`: nothing from the venv (no VIRTUAL_ENV, PYTHONPATH, PYTHONHOME).
    return {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "VOXTRAY_HOME": str(home)}


def run_watching_maps(
    env: dict[str, str], *args: str
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the bundle, collecting every file it maps (shared libraries, extension modules)
    from /proc while it runs."""
    mapped: set[str] = set()
    with subprocess.Popen(
        [str(BUNDLE), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    ) as process:
        maps = Path(f"/proc/{process.pid}/maps")
        deadline = time.monotonic() + 300
        while process.poll() is None and time.monotonic() < deadline:
            try:
                lines = maps.read_text().splitlines()
            except OSError:  # it exited between poll() and the read
                break
            for line in lines:
                fields = line.split(maxsplit=5)  # address perms offset dev inode path
                if len(fields) == 6 and fields[5].startswith("/"):
                    mapped.add(fields[5])
            time.sleep(0.02)
        stdout, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), mapped


def test_version(env: dict[str, str]) -> None:
    done = run_voxtray("--version", env=env, command=(str(BUNDLE),), cwd="/", timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"voxtray {__version__}"


def test_installed_defaults_verify(env: dict[str, str]) -> None:
    defaults = list(load_catalog().defaults)
    missing = [name for name in defaults if not (_store() / name).is_dir()]
    if missing:
        pytest.skip(f"default models {missing} not installed in {_store()}")
    done = run_voxtray(
        "models",
        "verify",
        *defaults,
        "--json",
        env=env,
        command=(str(BUNDLE),),
        cwd="/",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    results = {row["name"]: row for row in json.loads(done.stdout)["results"]}
    assert set(results) == set(defaults)
    assert all(row["ok"] for row in results.values()), results


# Installed elsewhere by the packages (the menu entry) or for developers only.
NOT_BUNDLED = {"README.md", "org.voxtray.Voxtray.desktop"}


def test_every_resource_the_app_reads_is_in_the_bundle() -> None:
    if not BUNDLE.is_file():
        pytest.skip(f"no bundle at {BUNDLE}: run packaging/build.sh first")
    shipped = REPO / "resources"
    wanted = {
        path.relative_to(shipped)
        for path in shipped.rglob("*")
        if path.is_file() and path.name not in NOT_BUNDLED
    }
    bundled = BUNDLE_DIR / "_internal" / "voxtray" / "resources"
    assert sorted(p for p in wanted if not (bundled / p).is_file()) == []


def test_a_vocabulary_is_read_by_the_bundle(env: dict[str, str]) -> None:
    # Vocabulary review reads resources/common-words.txt from inside the bundle.
    command = (str(BUNDLE),)
    args = ("transcribe", str(CLIP), "--json", "--vocabulary", "canoe,Voxtray")
    done = run_voxtray(*args, env=env, command=command, cwd="/", timeout=300)
    assert done.returncode == 0, done.stderr
    assert_heard(BIRCH, json.loads(done.stdout)["text"], SENTENCE_WER)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_transcribes_with_only_its_own_libraries(env: dict[str, str]) -> None:
    if not CLIP.is_file():
        pytest.skip(f"evaluation audio not found at {CLIP}")
    done, mapped = run_watching_maps(env, "transcribe", str(CLIP), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert_heard(BIRCH, result["text"], SENTENCE_WER)
    # onnxruntime ran from the bundle, and nothing was loaded out of the venv.
    internal = str(BUNDLE_DIR / "_internal") + "/"
    assert any(p.startswith(internal) and "onnxruntime_pybind11_state" in p for p in mapped)
    from_venv = sorted(p for p in mapped if p.startswith(str(VENV) + "/"))
    assert not from_venv, from_venv


def test_selftest_on_cpu(env: dict[str, str]) -> None:
    if (
        run_voxtray(
            "selftest", "--help", env=env, command=(str(BUNDLE),), cwd="/", timeout=300
        ).returncode
        != 0
    ):
        pytest.skip("this build has no `voxtray selftest` command")
    done = run_voxtray(
        "selftest",
        "--provider",
        "cpu",
        "--json",
        env=env,
        command=(str(BUNDLE),),
        cwd="/",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.strip()
    assert text, "selftest printed nothing"
    try:
        json.loads(text)
    except json.JSONDecodeError:  # JSON lines
        for line in text.splitlines():
            json.loads(line)


# Loaded by name at run time (importlib), so the bundle must carry them explicitly.
BACKENDS = ("pynput.keyboard._xorg", "pynput.mouse._xorg", "Xlib.display", "keyboard", "evdev")


def test_the_backends_loaded_by_name_are_in_the_bundle(env: dict[str, str]) -> None:
    viewer = Path(sys.executable).with_name("pyi-archive_viewer")
    if not viewer.exists():
        pytest.skip("PyInstaller's archive viewer is not installed (packaging/build.sh adds it)")
    listing = subprocess.run(
        [str(viewer), "--list", "--recursive", str(BUNDLE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    carried = {name for name in BACKENDS if f"'{name}'" in listing}
    assert carried == set(BACKENDS)
