"""GNOME 48 (Debian 13's GNOME Shell, portals and Settings), headless, in a Debian root.

Debian 12's GNOME (43) has no GlobalShortcuts portal; GNOME 48 has. The root is made once
from the Debian 13 minbase root of `tests.support.debian_root` and kept as a tarball in the
test store beside it, so only the first run downloads its packages.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.debian_root import CHROOT, Root, debian_root, mount_in
from tests.support.models import suite_home
from tests.support.portal_desktop import compositor_keys, wait_for_bus_name
from tests.support.process import stop_process, stop_processes
from tests.support.waiting import wait_for
from tests.support.wayland import SESSION_VARS

SUITE = "trixie"
PACKAGES = (
    "gnome-shell", "xdg-desktop-portal", "xdg-desktop-portal-gnome", "gnome-control-center",
    "at-spi2-core", "dbus-daemon", "python3-gi", "gir1.2-atspi-2.0", "gir1.2-gtk-3.0",
)  # fmt: skip


def gnome_tarball() -> Path:
    """The root with GNOME installed, as a tarball: made once, then kept."""
    cached = suite_home() / f"debian-{SUITE}-gnome.tar"
    if cached.is_file():
        return cached
    with tempfile.TemporaryDirectory(dir=suite_home(), prefix=".gnome-build-") as work:
        with debian_root(SUITE, Path(work)) as root:
            for command in (
                ("apt-get", "update"),
                ("apt-get", "install", "-y", "--no-install-recommends", *PACKAGES),
            ):
                done = root.run(*command, timeout=1800)
                if done.returncode != 0:
                    raise RuntimeError(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
        partial = cached.with_suffix(".part")
        subprocess.run(["tar", "-C", str(root.path), "-cf", str(partial), "."], check=True)
        partial.rename(cached)
        shutil.rmtree(root.path, ignore_errors=True)
    return cached


@dataclass
class Answering:
    """A dialog being answered on a thread; ``answered`` once it was."""

    answered: bool = False
    thread: threading.Thread | None = None

    def join(self, timeout: float) -> bool:
        if self.thread is not None:
            self.thread.join(timeout)
        return self.answered


@dataclass
class GnomeDesktop:
    """GNOME Shell running in the root; `env` is what a program of its session on this
    machine gets: the same sockets, by their paths through the root."""

    root: Root
    env: dict[str, str]
    inside_env: dict[str, str]
    """The same session as its own programs (inside the root) see it."""
    started: list[subprocess.Popen[bytes]]
    start: Callable[[list[str], dict[str, str], str], None]

    def restart_portal(self) -> None:
        """End the portal frontend and start it again, as a crash and D-Bus activation
        would: every portal session of every client is gone."""
        frontend = self.started.pop()
        stop_process(frontend)
        self.start([FRONTEND], self.inside_env, "portal")
        _wait_for_name(Path(self.env["XDG_RUNTIME_DIR"]), "org.freedesktop.portal.Desktop")

    def client_env(self) -> dict[str, str]:
        """This process's environment, less its own session's, with this desktop's."""
        return {**{k: v for k, v in os.environ.items() if k not in SESSION_VARS}, **self.env}

    def run_inside(self, *command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return self.root.run(*command, env=self.inside_env, timeout=timeout)

    def answer_dialog(self, app: str, *controls: str, timeout: float = 90) -> Answering:
        """Answer a dialog of `app` once it shows, through the accessibility bus, on a
        thread: each of `controls` (accessible names) is switched on or pressed, in order."""
        shutil.copy(_DIALOG_SCRIPT, self.root.path / "tmp" / _DIALOG_SCRIPT.name)
        command = ("python3", f"/tmp/{_DIALOG_SCRIPT.name}", str(timeout), app, *controls)
        answering = Answering()

        def answer() -> None:
            answering.answered = self.run_inside(*command, timeout=timeout + 10).returncode == 0

        answering.thread = threading.Thread(target=answer, daemon=True)
        answering.thread.start()
        return answering

    def answer_shortcut_dialog(self, button: str = "Add", timeout: float = 90) -> Answering:
        """GNOME Settings' "Add Keyboard Shortcuts": Add (or Cancel)."""
        return self.answer_dialog("global-shortcuts-provider", button, timeout=timeout)

    def allow_remote_interaction(self) -> Answering:
        """The portal's "Remote Desktop" dialog: "Allow Remote Interaction" on, then Share."""
        return self.answer_dialog("xdg-desktop-portal-gnome", "Allow Remote Interaction", "Share")

    def leave_overview(self) -> None:
        """Escape, as a user does after logging in: GNOME starts in the overview, where the
        shortcuts of apps are off."""
        compositor_keys(self.env, [ESCAPE])


@contextlib.contextmanager
def gnome_desktop(where: Path, data_home: Path) -> Iterator[GnomeDesktop]:
    """GNOME Shell 48, headless, with its session bus, accessibility bus and portals, in a
    fresh copy of the root under `where`. The session's XDG_DATA_HOME is `data_home`, and
    it and this Python are mounted at the same paths inside: the one filesystem of a real
    session, where the desktop reads the entry the app writes and finds what it runs."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    root = Root(where / "root", SUITE)
    root.path.mkdir()
    subprocess.run(["tar", "-C", str(root.path), "-xf", str(gnome_tarball())], check=True)
    shutil.rmtree(root.path / "run/systemd", ignore_errors=True)  # no logind: no seat to wait for
    runtime = where / "rt"  # a short path: sockets' paths are limited to 107 bytes
    runtime.mkdir(mode=0o700)
    (root.path / "run/dbus").mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        stack.callback(_remove, root.path)
        python = Path(sys.executable)
        shared = {runtime, data_home, python.parent, Path(os.path.realpath(python)).parent}
        mounts = [("proc", "/proc"), ("/dev", "/dev"), *((str(p), str(p)) for p in sorted(shared))]
        mount_in(stack, root.path, mounts, bind="--rbind")
        started: list[subprocess.Popen[bytes]] = []
        stack.callback(stop_processes, started)
        inside = {
            "HOME": "/root", "XDG_RUNTIME_DIR": str(runtime), "XDG_SESSION_TYPE": "wayland",
            "XDG_CURRENT_DESKTOP": "GNOME", "DBUS_SESSION_BUS_ADDRESS": f"unix:path={runtime}/bus",
            "LANG": "C.UTF-8", "XDG_DATA_HOME": str(data_home),
        }  # fmt: skip
        start = _starter(root, where, started)
        start(["dbus-daemon", "--system", "--nofork", "--nopidfile"], {}, "system-bus")
        session_bus = f"--address={inside['DBUS_SESSION_BUS_ADDRESS']}"
        start(["dbus-daemon", "--session", "--nofork", session_bus], inside, "session-bus")
        wait_for(lambda: (runtime / "bus").exists(), 20, lambda: "no session bus in the root")
        start([*SHELL], inside, "gnome-shell")
        wait_for(lambda: (runtime / "wayland-0").exists(), 60, lambda: _log(where, "gnome-shell"))
        inside["WAYLAND_DISPLAY"] = "wayland-0"
        # What a screen reader's user has on: GTK 4 apps (Settings' shortcut dialog) join the
        # accessibility bus, where the tests read and answer them.
        root.run(*A11Y_ON, env=inside, timeout=30)
        update = ["dbus-update-activation-environment", *(f"{k}={v}" for k, v in inside.items())]
        root.run(*update, env=inside, timeout=30)
        start([BACKEND], inside, "portal-backend")
        _wait_for_name(runtime, "org.freedesktop.impl.portal.desktop.gnome")
        start([FRONTEND], inside, "portal")
        _wait_for_name(runtime, "org.freedesktop.portal.Desktop")
        env = {
            "XDG_SESSION_TYPE": "wayland", "XDG_CURRENT_DESKTOP": "GNOME",
            "XDG_RUNTIME_DIR": str(runtime), "WAYLAND_DISPLAY": "wayland-0",
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={runtime}/bus",
            "XDG_DESKTOP_PORTAL_DIR": str(root.path / "usr/share/xdg-desktop-portal/portals"),
            "XDG_DATA_HOME": str(data_home),
        }  # fmt: skip
        yield GnomeDesktop(root, env, inside, started, start)


ESCAPE = 0xFF1B
A11Y_ON = ("gsettings", "set", "org.gnome.desktop.interface", "toolkit-accessibility", "true")
_DIALOG_SCRIPT = Path(__file__).with_name("gnome_dialog.py")
SHELL = ("gnome-shell", "--headless", "--wayland", "--no-x11", "--virtual-monitor", "1280x800")
FRONTEND = "/usr/libexec/xdg-desktop-portal"
BACKEND = "/usr/libexec/xdg-desktop-portal-gnome"


def _missing() -> str | None:
    for tool in ("chroot", "mount", "debootstrap"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} not installed: apt-get install debootstrap"
    if os.geteuid() != 0:
        return "a Debian root needs root (chroot, mount)"
    return None


def _starter(
    root: Root, logs: Path, started: list[subprocess.Popen[bytes]]
) -> Callable[[list[str], dict[str, str], str], None]:
    def start(command: list[str], env: dict[str, str], log: str) -> None:
        environ = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", **env}
        with (logs / f"{log}.log").open("ab") as out:
            command = [CHROOT, str(root.path), *command]
            process = subprocess.Popen(
                command, env=environ, stdout=out, stderr=out, stdin=subprocess.DEVNULL
            )
        started.append(process)

    return start


def _remove(path: Path) -> None:
    """The root's files, once nothing of this machine is mounted inside it any more."""
    inside = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    if not any(mount.startswith(f"{path}/") for mount in inside):
        shutil.rmtree(path, ignore_errors=True)


def _log(logs: Path, name: str) -> str:
    path = logs / f"{name}.log"
    told = path.read_text(errors="replace")[-3000:] if path.exists() else ""
    return f"{name} did not start: {told}"


def _wait_for_name(runtime: Path, name: str) -> None:
    bus = {"DBUS_SESSION_BUS_ADDRESS": f"unix:path={runtime}/bus", "PATH": os.environ["PATH"]}
    wait_for_bus_name(bus, name, timeout=30)
