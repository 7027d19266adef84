"""The Linux packages on clean Debian 12 and 13 roots, as a user installs them (marker
`packages`).

A minimal root of each release is made with debootstrap from Debian's registry (kept as a
tarball under the test store between runs), the .deb goes in with `apt-get install
./voxtray_*.deb` so its dependencies are resolved for real (on 13 through the renamed
64-bit-time libraries), and the installed command is used as a user uses it:
`--version`, a transcription (which installs the default models on first use), the tray
app on an X display with a real tray, `status --json`, start at login through the entry the
app writes; then the package is removed and purged and nothing of it may be left. The
`.tar.zst` with `install.sh` gets the same run without apt, plus what install.sh must not
do: overwrite or remove a file it did not make, drop the CUDA add-on on an upgrade, claim
to have removed what it could not. Build first:
`packaging/build.sh && packaging/linux/build-packages.sh`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.audio import REPO, manifest_clip
from tests.support.debian_root import NOBODY, Root, debian_root
from tests.support.pulse import virtual_microphone
from tests.support.waiting import wait_for
from tests.support.x11 import XServer, start_tray, tray_panel
from voxtray import __version__
from voxtray.scoring.wer import word_errors

pytestmark = [pytest.mark.packages, pytest.mark.slow]

DIST = REPO / "dist"
DEB = DIST / f"voxtray_{__version__}_amd64.deb"
CUDA_DEB = DIST / f"voxtray-cuda_{__version__}_amd64.deb"
TARBALL = DIST / f"voxtray-{__version__}-x86_64.tar.zst"
CUDA_TARBALL = DIST / f"voxtray-cuda-{__version__}-x86_64.tar.zst"
SUITES = ("bookworm", "trixie")  # Debian 12 and 13
CLIP = manifest_clip("harvard_sb_example1")
MAX_WER = 0.15  # whisper-tiny.en gets this 8-word sentence right; one word wrong is 0.125
# A desktop's sound stack routes ALSA's default device to its sound server (pulseaudio's or
# pipewire-alsa's package does this); here it is the test's virtual microphone.
ASOUND_CONF = "pcm.!default { type pulse }\nctl.!default { type pulse }\n"
AUTOSTART = "root/.config/autostart/voxtray.desktop"
PROVIDERS = "_internal/onnxruntime/capi"
ADDON = ("libonnxruntime_providers_cuda.so", "libonnxruntime_providers_tensorrt.so")


@pytest.fixture(scope="module", params=SUITES)
def debian(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Root]:
    if os.geteuid() != 0:
        pytest.skip("a Debian root needs root (chroot, mounts)")
    missing = [tool for tool in ("debootstrap", "Xvfb", "trayer") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (packaging/dev.sh test installs them)")
    if not (DEB.is_file() and TARBALL.is_file()):
        pytest.skip("no packages: run packaging/build.sh && packaging/linux/build-packages.sh")
    with debian_root(request.param, tmp_path_factory.mktemp(f"debian-{request.param}")) as root:
        done = root.run("apt-get", "update")
        assert done.returncode == 0, done.stderr
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


def _start_tray_app(
    root: Root, desktop: Desktop, home: str, command: str, launch: list[str] | None = None
) -> tuple[float, float]:
    """Seconds from launch (`launch`, by default `command` alone) to the tray icon and to
    `ready`; the app is quit after."""
    display = desktop.display
    env = {**desktop.env, "VOXTRAY_HOME": home, "XDG_RUNTIME_DIR": "/tmp/run"}
    (root.path / "tmp" / "run").mkdir(mode=0o700, exist_ok=True)
    began = time.monotonic()
    app = root.popen(*(launch or [command]), env=env)
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


def _login_command(root: Root) -> list[str]:
    """The command of the login entry, split as a desktop session's autostart does (the
    entry's quoting is the shell's for the paths written here)."""
    lines = (root.path / AUTOSTART).read_text().splitlines()
    return shlex.split(next(line for line in lines if line.startswith("Exec="))[5:])


def _use_it(root: Root, desktop: Desktop, command: str, label: str, executable: str) -> None:
    """What a user does first with the installed command, `executable` being the program
    it runs; the login entry the app writes at start must run it, and it is used for
    one more start. Prints the start-up times."""
    home = f"/root/{label}-data"
    done = root.run(command, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"voxtray {__version__}"
    shutil.copy(CLIP.path, root.path / "tmp" / "clip.wav")
    done = root.run(command, "transcribe", "/tmp/clip.wav", env={"VOXTRAY_HOME": home})
    assert done.returncode == 0, done.stderr
    assert word_errors(CLIP.reference, done.stdout).rate <= MAX_WER, done.stdout
    # Start at login was turned on in the settings window.
    (root.path / home.lstrip("/") / "settings.json").write_text('{"start_at_login": true}\n')
    _drop_page_cache()
    cold = _start_tray_app(root, desktop, home, command)
    warm = _start_tray_app(root, desktop, home, command)
    login = _login_command(root)
    assert len(login) == 1, login  # a bundle refuses any argument such as `-m voxtray`
    installed = root.path / executable.lstrip("/")
    assert (root.path / login[0].lstrip("/")).resolve() == installed.resolve(), login
    _start_tray_app(root, desktop, home, command, launch=login)
    (root.path / AUTOSTART).unlink()
    print(f"\n{root.suite} {label}: tray icon {cold[0]:.2f} s / ready {cold[1]:.2f} s (cold: "
          f"page cache dropped), {warm[0]:.2f} s / {warm[1]:.2f} s (warm)")  # fmt: skip


def _addon_check(root: Root, command: str = "voxtray") -> dict[str, object] | None:
    """The self-test's check of onnxruntime's CUDA provider library (the add-on's file)."""
    done = root.run(
        command, "selftest", "--provider", "cuda", "--runs", "1", "--json",
        env={"VOXTRAY_HOME": "/root/addon-data"},
    )  # fmt: skip
    report = json.loads(done.stdout)
    libraries = report["diagnosis"]["libraries"]
    found = [c for c in libraries if c["name"] == "libonnxruntime_providers_cuda.so"]
    return found[0] if found else None


def test_deb_installs_runs_and_leaves_nothing(debian: Root, desktop_for: Desktop) -> None:
    began = time.monotonic()
    before = debian.files("root")
    for package in (DEB, CUDA_DEB):
        shutil.copy(package, debian.path / "tmp" / package.name)
    # As a user runs it: apt installs what the package recommends too (the typing tools).
    done = debian.run("apt-get", "install", "-y", f"/tmp/{DEB.name}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert (debian.path / "usr/bin/voxtray").exists()
    assert (debian.path / "usr/share/applications/org.voxtray.Voxtray.desktop").is_file()
    assert (debian.path / "usr/share/icons/hicolor/scalable/apps/voxtray.svg").is_file()
    # An entry as the previous release wrote it, which the bundle refused to start from.
    entry = debian.path / AUTOSTART
    entry.parent.mkdir(parents=True)
    entry.write_text("[Desktop Entry]\nType=Application\nName=Voxtray\n"
                     "Exec=/usr/lib/voxtray/voxtray -m voxtray\n")  # fmt: skip
    _use_it(debian, desktop_for, "voxtray", "deb", "/usr/lib/voxtray/voxtray")

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
    print(f"{debian.suite} deb test: {time.monotonic() - began:.0f} s")


def _unpack(root: Root, archive: Path) -> str:
    """The archive unpacked under /tmp in the root; its folder there."""
    subprocess.run(["tar", "--zstd", "-C", str(root.path / "tmp"), "-xf", str(archive)], check=True)
    return "/tmp/" + archive.name.removesuffix("-x86_64.tar.zst")


def _install_sh(root: Root, folder: str, *flags: str, user: str | None = None) -> tuple[int, str]:
    """install.sh's exit code and what it said on stderr."""
    env = {"HOME": "/tmp"} if user else None
    done = root.run("sh", f"{folder}/install.sh", *flags, env=env, user=user)
    return done.returncode, done.stderr.strip()


def _install_the_dependencies(root: Root) -> None:
    """As packaging/README.md says for the archive: the .deb's Depends and Recommends line,
    alternatives and all, given to `apt-get satisfy`."""
    fields = subprocess.run(
        ["dpkg-deb", "-f", str(DEB), "Depends", "Recommends"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    wanted = ", ".join(line.partition(":")[2].strip() for line in fields.splitlines())
    done = root.run("apt-get", "satisfy", "-y", "--no-install-recommends", wanted)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr


def _models_from_the_deb_run(root: Root) -> None:
    """The models the .deb's first transcription installed, where that ran before in this
    root: downloading and converting them once per release is enough."""
    installed = root.path / "root/deb-data/models"
    if installed.is_dir():
        shutil.copytree(installed, root.path / "root/tarball-data/models", symlinks=True)


def test_tarball_installs_for_one_user_and_uninstalls(debian: Root, desktop_for: Desktop) -> None:
    """Without apt: the libraries the .deb depends on are installed first, as
    packaging/README.md says, then install.sh puts Voxtray under ~/.local."""
    began = time.monotonic()
    _install_the_dependencies(debian)
    folder, addon = _unpack(debian, TARBALL), _unpack(debian, CUDA_TARBALL)
    command = "/root/.local/bin/voxtray"
    own = debian.path / command.lstrip("/")
    own.parent.mkdir(parents=True)  # the user's own ~/.local/bin, which stays theirs
    _models_from_the_deb_run(debian)
    users = ("root/tarball-data", "root/addon-data", "root/.config")  # the user's own files
    before = debian.files(*users)
    folders_before = debian.folders(*users)

    # The user's own command of that name is neither replaced nor, later, removed.
    own.write_text("#!/bin/sh\necho my own voxtray\n")
    code, said = _install_sh(debian, folder)
    assert (code, len(said.splitlines())) == (6, 1), said
    assert "/root/.local/bin/voxtray is in the way" in said
    assert own.read_text() == "#!/bin/sh\necho my own voxtray\n"
    assert not (debian.path / "root/.local/lib/voxtray").exists()
    own.unlink()

    assert _install_sh(debian, folder)[0] == 0
    _use_it(debian, desktop_for, command, "tarball", "/root/.local/lib/voxtray/voxtray")

    # An upgrade (install.sh again) keeps the CUDA add-on installed since.
    assert _install_sh(debian, addon)[0] == 0
    assert _install_sh(debian, folder)[0] == 0
    providers = debian.path / "root/.local/lib/voxtray" / PROVIDERS
    assert all((providers / name).is_file() for name in ADDON)
    assert _addon_check(debian, command) is None

    # The user replaced the command with a script of their own: uninstalling leaves it.
    own.unlink()
    own.write_text("#!/bin/sh\necho my own voxtray\n")
    code, said = _install_sh(debian, folder, "--uninstall")
    assert code == 0, said
    assert own.read_text() == "#!/bin/sh\necho my own voxtray\n"
    own.unlink()
    assert _install_sh(debian, folder, "--uninstall")[0] == 3  # nothing left to remove
    left = debian.left_by(before, *users)
    assert left == set(), sorted(left)[:20]
    folders_left = debian.folders(*users) - folders_before
    assert folders_left == set(), sorted(folders_left)
    print(f"{debian.suite} tarball test: {time.monotonic() - began:.0f} s")


def test_system_install_needs_root_and_says_so(debian: Root) -> None:
    """`--system` by a user who is not root: one line and exit 6, nothing changed, whether
    installing or uninstalling; as root it installs and uninstalls cleanly."""
    folder = _unpack(debian, TARBALL)
    before = debian.files()
    folders_before = debian.folders()
    code, said = _install_sh(debian, folder, "--system", "--uninstall", user=NOBODY)
    assert (code, said) == (3, "install.sh: no Voxtray installed in /usr/local: nothing removed")
    code, said = _install_sh(debian, folder, "--system", user=NOBODY)
    assert (code, len(said.splitlines())) == (6, 1), said
    assert said.startswith("install.sh: cannot write to /usr/local/lib (--system needs root:")
    assert debian.files() == before

    assert _install_sh(debian, folder, "--system")[0] == 0
    installed = debian.files()
    assert debian.run("/usr/local/bin/voxtray", "--version").returncode == 0
    code, said = _install_sh(debian, folder, "--system", "--uninstall", user=NOBODY)
    assert (code, len(said.splitlines())) == (6, 1), said
    assert "--system needs root: sudo" in said
    assert debian.files() == installed
    assert _install_sh(debian, folder, "--system", "--uninstall")[0] == 0
    assert debian.files() == before
    assert debian.folders() == folders_before


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
