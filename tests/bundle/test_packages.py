"""The Linux packages on a clean Debian, as a user installs them (marker `packages`).

A minimal Debian 12 root is made with debootstrap from Debian's registry (kept as a tarball
under the test store between runs), the .deb goes in with `apt-get install ./voxtray_*.deb`
so its dependencies are resolved for real, and the installed command is used as a user
uses it: `--version`, a transcription (which installs the default models on first use),
the tray app on an X display with a real tray, `status --json`; then the package is
removed and purged and nothing of it may be left. The `.tar.zst` with `install.sh` gets
the same run without apt. Build first: `packaging/build.sh && packaging/linux/build-packages.sh`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.audio import REPO, clip_path
from tests.support.models import suite_home
from tests.support.pulse import virtual_microphone
from tests.support.waiting import wait_for
from tests.support.x11 import XServer, start_tray, tray_panel
from voxtray import __version__

pytestmark = [pytest.mark.packages, pytest.mark.slow]

DIST = REPO / "dist"
DEB = DIST / f"voxtray_{__version__}_amd64.deb"
CUDA_DEB = DIST / f"voxtray-cuda_{__version__}_amd64.deb"
TARBALL = DIST / f"voxtray-{__version__}-x86_64.tar.zst"
SUITE = "bookworm"
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
# What a user's own use of the system writes, which no package owns.
NOT_THE_PACKAGE = ("var/lib/apt", "var/lib/dpkg", "var/cache", "var/log", "tmp", "proc", "dev")
# A desktop's sound stack routes ALSA's default device to its sound server (pulseaudio's or
# pipewire-alsa's package does this); here it is the test's virtual microphone.
# Made by the maintainer scripts of dependencies (ca-certificates' links and settings,
# netbase's host files), which Debian leaves in place when those are purged.
DEPENDENCIES_MADE = ("etc/ssl/certs/", "etc/ca-certificates.conf", "etc/hosts", "etc/networks")
ASOUND_CONF = "pcm.!default { type pulse }\nctl.!default { type pulse }\n"


def _mirror() -> str:
    """The Debian mirror this machine's apt uses."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.is_file():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    return "http://deb.debian.org/debian"


def _debian_tarball() -> Path:
    """A minbase Debian root as a tarball, made once with debootstrap and kept."""
    cached = suite_home() / f"debian-{SUITE}-minbase.tar"
    if cached.is_file():
        return cached
    build = cached.with_suffix(".build")
    shutil.rmtree(build, ignore_errors=True)
    subprocess.run(
        ["debootstrap", "--variant=minbase", SUITE, str(build), _mirror()],
        check=True,
        capture_output=True,
        timeout=1200,
    )
    partial = cached.with_suffix(".part")
    subprocess.run(["tar", "-C", str(build), "-cf", str(partial), "."], check=True)
    partial.rename(cached)
    shutil.rmtree(build)
    return cached


@dataclass
class Root:
    """A fresh Debian root with /proc, /dev and the X socket folder mounted in."""

    path: Path

    def run(
        self, *command: str, env: dict[str, str] | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        environ = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root"}
        environ.update(env or {})
        environ["DEBIAN_FRONTEND"] = "noninteractive"
        return subprocess.run(
            [CHROOT, str(self.path), *command],
            env=environ,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(self, *command: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", **env}
        log = (self.path / "tmp" / "app.log").open("wb")
        return subprocess.Popen(
            [CHROOT, str(self.path), *command], env=environ, stdout=log, stderr=log
        )

    def owned(self) -> set[str]:
        """Every path an installed package of the root owns, as dpkg lists them."""
        owned = set()
        for listing in (self.path / "var/lib/dpkg/info").glob("*.list"):
            owned |= {line.lstrip("/") for line in listing.read_text().splitlines() if line}
        return owned

    def left_by(self, before: set[str], *also_not: str) -> set[str]:
        """Files that are new since `before` and that no installed package owns, less
        what the dependencies' own scripts made."""
        new = self.files(*also_not) - before - self.owned()
        return {f for f in new if not f.startswith(DEPENDENCIES_MADE)}

    def files(self, *also_not: str) -> set[str]:
        """Every file outside the folders apt, logs and the user's data write to."""
        skip = NOT_THE_PACKAGE + also_not
        found = set()
        for folder, subfolders, names in os.walk(self.path):
            rel = Path(folder).relative_to(self.path).as_posix()
            # Pruned, not filtered: /proc and the mounted sockets change while walked.
            subfolders[:] = [
                d for d in subfolders if not f"{rel}/{d}".lstrip("./").startswith(skip)
            ]
            found |= {f"{rel}/{n}".lstrip("./") for n in names}
        return {f for f in found if not f.startswith(skip)}


@pytest.fixture(scope="module")
def debian(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Root]:
    if os.geteuid() != 0:
        pytest.skip("a Debian root needs root (chroot, mounts)")
    missing = [tool for tool in ("debootstrap", "Xvfb", "trayer") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (packaging/dev.sh test installs them)")
    if not (DEB.is_file() and TARBALL.is_file()):
        pytest.skip("no packages: run packaging/build.sh && packaging/linux/build-packages.sh")
    root = Root(tmp_path_factory.mktemp("debian") / "root")
    root.path.mkdir()
    subprocess.run(["tar", "-C", str(root.path), "-xf", str(_debian_tarball())], check=True)
    shutil.copy("/etc/resolv.conf", root.path / "etc" / "resolv.conf")
    # The root is on this machine's network: it trusts the certificate authorities this
    # machine added (a proxy's, where there is one); ca-certificates picks them up.
    local_cas = root.path / "usr/local/share/ca-certificates"
    local_cas.mkdir(parents=True, exist_ok=True)
    for ca in Path("/usr/local/share/ca-certificates").glob("*.crt"):
        shutil.copy(ca, local_cas / ca.name)
    mounts = []
    with contextlib.ExitStack() as stack:
        for source, kind in (("/proc", "proc"), ("/dev", "bind"), ("/tmp/.X11-unix", "bind")):
            target = root.path / source.lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            args = ["-t", "proc", "proc"] if kind == "proc" else ["--bind", source]
            subprocess.run(["mount", *args, str(target)], check=True)
            mounts.append(target)
        stack.callback(lambda: [subprocess.run(["umount", "-l", str(m)]) for m in mounts])
        yield root


@dataclass
class Desktop:
    display: str
    env: dict[str, str]
    """What the app inside the root gets from the desktop: the display and the sound server."""


@pytest.fixture(scope="module")
def desktop_for(debian: Root) -> Iterator[Desktop]:
    """An X display with a real tray and a sound server with a microphone, both on this
    machine and reachable from inside the root (their sockets are mounted in)."""
    server = XServer()
    tray = start_tray(server.name)
    with virtual_microphone() as mic:
        target = debian.path / str(mic.runtime_dir).lstrip("/")
        target.mkdir(parents=True)
        subprocess.run(["mount", "--bind", str(mic.runtime_dir), str(target)], check=True)
        try:
            done = debian.run(
                "apt-get", "install", "-y", "--no-install-recommends", "libasound2-plugins"
            )
            assert done.returncode == 0, done.stderr
            (debian.path / "etc" / "asound.conf").write_text(ASOUND_CONF)
            wait_for(lambda: tray_panel(server.name) is not None, 15, "trayer did not start")
            yield Desktop(server.name, {"DISPLAY": server.name, "PULSE_SERVER": mic.server})
        finally:
            subprocess.run(["umount", "-l", str(target)])
            tray.terminate()
            tray.wait(timeout=5)
            server.stop()


def _icon_docked(display: str) -> bool:
    panel = tray_panel(display)
    return panel is not None and panel["WIDTH"] >= 16


def _start_tray_app(root: Root, desktop: Desktop, home: str, command: str) -> tuple[float, float]:
    """Seconds from launch to the tray icon and to `ready`; the app is quit after."""
    display = desktop.display
    env = {**desktop.env, "VOXTRAY_HOME": home, "XDG_RUNTIME_DIR": "/tmp/run"}
    (root.path / "tmp" / "run").mkdir(mode=0o700, exist_ok=True)
    began = time.monotonic()
    app = root.popen(command, env=env)
    try:
        wait_for(lambda: _icon_docked(display), 120, "no tray icon appeared", every=0.02)
        icon_s = time.monotonic() - began

        def ready() -> bool:
            done = root.run(command, "status", "--json", env=env, timeout=30)
            return done.returncode == 0 and json.loads(done.stdout)["state"] == "ready"

        wait_for(ready, 600, lambda: (root.path / "tmp" / "app.log").read_text(), every=0.1)
        ready_s = time.monotonic() - began
        status = json.loads(root.run(command, "status", "--json", env=env).stdout)
        assert status["state"] == "ready", status
        assert status["model"] == "whisper-tiny.en", status
        assert status["provider"] == "cpu", status
        assert root.run(command, "quit", env=env).returncode == 0
        assert app.wait(timeout=60) == 0
    finally:
        if app.poll() is None:
            app.kill()
    wait_for(lambda: not _icon_docked(display), 30, "the tray icon stayed after quit")
    return icon_s, ready_s


def _drop_page_cache() -> None:
    """A cold start reads the app from disk, not from what the install left in memory."""
    os.sync()
    with contextlib.suppress(OSError):
        Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _use_it(root: Root, desktop: Desktop, command: str, label: str) -> None:
    """What a user does first with the installed command; prints the start-up times."""
    home = f"/root/{label}-data"
    done = root.run(command, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"voxtray {__version__}"
    shutil.copy(clip_path("harvard_sb_example1"), root.path / "tmp" / "clip.wav")
    done = root.run(command, "transcribe", "/tmp/clip.wav", env={"VOXTRAY_HOME": home})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The birch canoe slid on the smooth planks.", done
    _drop_page_cache()
    cold = _start_tray_app(root, desktop, home, command)
    warm = _start_tray_app(root, desktop, home, command)
    print(f"\n{label}: tray icon {cold[0]:.2f} s / ready {cold[1]:.2f} s (cold: page cache "
          f"dropped), {warm[0]:.2f} s / {warm[1]:.2f} s (warm)")  # fmt: skip


def _addon_check(root: Root) -> dict[str, object] | None:
    """The self-test's check of onnxruntime's CUDA provider library (the add-on's file)."""
    done = root.run(
        "voxtray", "selftest", "--provider", "cuda", "--runs", "1", "--json",
        env={"VOXTRAY_HOME": "/root/deb-data"},
    )  # fmt: skip
    report = json.loads(done.stdout)
    libraries = report["diagnosis"]["libraries"]
    found = [c for c in libraries if c["name"] == "libonnxruntime_providers_cuda.so"]
    return found[0] if found else None


def test_deb_installs_runs_and_leaves_nothing(debian: Root, desktop_for: Desktop) -> None:
    began = time.monotonic()
    assert debian.run("apt-get", "update").returncode == 0
    before = debian.files("root")
    for package in (DEB, CUDA_DEB):
        shutil.copy(package, debian.path / "tmp" / package.name)
    # As a user runs it: apt installs what the package recommends too (the typing tools).
    done = debian.run("apt-get", "install", "-y", f"/tmp/{DEB.name}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert (debian.path / "usr/bin/voxtray").exists()
    assert (debian.path / "usr/share/applications/voxtray.desktop").is_file()
    assert (debian.path / "usr/share/icons/hicolor/scalable/apps/voxtray.svg").is_file()
    _use_it(debian, desktop_for, "voxtray", "deb")

    # Without the add-on the self-test names it, with the exact command; with it, not.
    addon = _addon_check(debian)
    assert addon is not None
    assert addon["ok"] is False
    assert addon["fix"] == "install the CUDA add-on: sudo apt-get install voxtray-cuda"
    done = debian.run("apt-get", "install", "-y", f"/tmp/{CUDA_DEB.name}")
    assert done.returncode == 0, done.stderr
    assert _addon_check(debian) is None

    done = debian.run("apt-get", "purge", "-y", "voxtray-cuda", "voxtray")
    assert done.returncode == 0, done.stderr
    assert debian.run("apt-get", "autoremove", "--purge", "-y").returncode == 0
    assert debian.run("dpkg", "-s", "voxtray").returncode != 0, "still installed"
    left = debian.left_by(before, "root")
    assert left == set(), sorted(left)[:20]
    assert (debian.path / "root/deb-data/models").is_dir(), "user data must stay"
    print(f"deb test: {time.monotonic() - began:.0f} s")


def test_tarball_installs_for_one_user_and_uninstalls(debian: Root, desktop_for: Desktop) -> None:
    """Without apt: the libraries the .deb depends on are installed by hand first, as the
    packaging/README.md says, then install.sh puts Voxtray under ~/.local."""
    fields = subprocess.run(
        ["dpkg-deb", "-f", str(DEB), "Depends", "Recommends"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    listed = " ".join(line.partition(":")[2] for line in fields.splitlines())
    depends = [item.split()[0] for item in listed.split(",") if item.strip()]
    done = debian.run("apt-get", "install", "-y", "--no-install-recommends", *depends)
    assert done.returncode == 0, done.stderr
    before = debian.files("root/tarball-data")
    subprocess.run(
        ["tar", "--zstd", "-C", str(debian.path / "tmp"), "-xf", str(TARBALL)], check=True
    )
    folder = f"/tmp/voxtray-{__version__}"
    done = debian.run("sh", f"{folder}/install.sh")
    assert done.returncode == 0, done.stderr
    _use_it(debian, desktop_for, "/root/.local/bin/voxtray", "tarball")
    assert debian.run("sh", f"{folder}/install.sh", "--uninstall").returncode == 0
    left = debian.left_by(before, "root/tarball-data")
    assert left == set(), sorted(left)[:20]


def test_lintian_finds_nothing_but_the_overridden() -> None:
    """Every tag lintian would raise is overridden with its reason in the package
    (packaging/linux/lintian-overrides), so a new one fails here."""
    if shutil.which("lintian") is None:
        pytest.skip("lintian is not installed (packaging/dev.sh test installs it)")
    if not (DEB.is_file() and CUDA_DEB.is_file()):
        pytest.skip("no packages: run packaging/build.sh && packaging/linux/build-packages.sh")
    done = subprocess.run(
        ["lintian", "--tag-display-limit", "0", str(DEB), str(CUDA_DEB)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    tags = [line for line in done.stdout.splitlines() if line[:2] in ("E:", "W:", "I:")]
    assert tags == []
    assert done.returncode == 0, done.stderr
