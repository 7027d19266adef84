"""GNOME's mutter or KDE's kwin, headless, with the real xdg-desktop-portal on a private bus.

On the compositor of `tests.support.wayland.other_compositor`: the accessibility bus (so
the consent dialog can be read and answered as a screen reader would), the permission
store, the desktop's portal backend (xdg-desktop-portal-gnome or -kde) and the portal
frontend, each our child, ended by its process id.

The one-time consent, headless:

- KDE Plasma 5.27 lends a keyboard without a question when no screen is shared.
- GNOME 43 asks with a dialog: "Allow remote interaction" must be switched on before
  "Share" can be pressed. `approve_gnome_consent` does what a user does: it switches it on
  through the accessibility bus and presses Alt+S on the compositor's own keyboard (mutter's
  RemoteDesktop API, the path a physical key takes).
- Debian 12's frontend (1.16) ignores ``persist_mode``: it asks at every session start, so
  no answer can be pre-seeded there. From 1.17 the frontend keeps the answer in the
  permission store (table ``remote-desktop``) under the restore token Voxtray keeps in
  ``portal-consent.json``: answering once (``voxtray doctor``) and keeping both files
  grants it without the dialog: the frontend's table is the file
  ``$XDG_DATA_HOME/flatpak/db/remote-desktop``, so a test home seeded with that file and
  ``portal-consent.json`` from one answered run starts silently. That path has no Debian 12
  portal to be tested on here.
- Refusing: `refuse_gnome_consent` presses Cancel through the accessibility bus.
- Withdrawing: `end_remote_control` closes the session at the portal backend, as the
  desktop does when the user stops remote control; the portal tells the client (KDE; the
  GNOME 43 backend does not report it).

Debian packages: xdg-desktop-portal xdg-desktop-portal-gnome xdg-desktop-portal-kde
qtwayland5 layer-shell-qt (the KDE backend's windows) at-spi2-core python3-pyatspi.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import atspi
from tests.support.process import stop_process, stop_processes
from tests.support.wayland import WaylandDesktop, other_compositor

PACKAGES = (
    "xdg-desktop-portal xdg-desktop-portal-gnome xdg-desktop-portal-kde qtwayland5 layer-shell-qt"
)
FRONTEND = "/usr/libexec/xdg-desktop-portal"
PERMISSION_STORE = "/usr/libexec/xdg-permission-store"
BACKENDS = {
    "GNOME": "/usr/libexec/xdg-desktop-portal-gnome",
    "KDE": "/usr/lib/x86_64-linux-gnu/libexec/xdg-desktop-portal-kde",
}
_CONSENT_SCRIPT = Path(__file__).with_name("portal_consent.py")


def missing(name: str) -> str | None:
    for path in (FRONTEND, PERMISSION_STORE, BACKENDS[name]):
        if not os.access(path, os.X_OK):
            return f"{path} not installed: apt-get install {PACKAGES}"
    return atspi.missing()


@dataclass
class PortalDesktop:
    """The compositor, and the environment a program of its session gets."""

    desktop: WaylandDesktop
    env: dict[str, str]
    name: str
    started: list[subprocess.Popen[bytes]] = dataclasses.field(default_factory=list)
    """Our children: the accessibility bus, the permission store, the backend, the frontend."""

    def restart_frontend(self) -> None:
        """End the portal frontend (xdg-desktop-portal) and start it again, as a crash and
        D-Bus activation would: every portal session of every client is gone."""
        stop_process(self.started.pop())
        self.started.append(_start([FRONTEND], self.env, self.desktop.runtime_dir, "portal"))
        wait_for_bus_name(self.env, "org.freedesktop.portal.Desktop")


@contextlib.contextmanager
def portal_desktop(name: str) -> Iterator[PortalDesktop]:
    """``name`` "GNOME" or "KDE"; skips the caller when a part is missing."""
    reason = missing(name)
    if reason is not None:
        pytest.skip(reason)
    with other_compositor(name) as desktop:
        env = desktop.env()
        env.pop("NO_AT_BRIDGE", None)
        started: list[subprocess.Popen[bytes]] = []
        try:
            env = _a11y(env, started)
            started.append(_start([PERMISSION_STORE], env, desktop.runtime_dir, "permission-store"))
            backend_env = {**env, "QT_QPA_PLATFORM": "wayland"} if name == "KDE" else env
            backend = [BACKENDS[name]]
            started.append(_start(backend, backend_env, desktop.runtime_dir, "portal-backend"))
            wait_for_bus_name(env, f"org.freedesktop.impl.portal.desktop.{name.lower()}")
            started.append(_start([FRONTEND], env, desktop.runtime_dir, "portal"))
            wait_for_bus_name(env, "org.freedesktop.portal.Desktop")
            yield PortalDesktop(desktop, env, name, started)
        finally:
            stop_processes(started)


def _a11y(env: dict[str, str], started: list[subprocess.Popen[bytes]]) -> dict[str, str]:
    launcher = subprocess.Popen(
        [atspi.LAUNCHER, "--launch-immediately"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    started.append(launcher)
    deadline = time.monotonic() + 15
    while not atspi._answers(env):
        if time.monotonic() > deadline or launcher.poll() is not None:
            raise RuntimeError("the accessibility bus did not start")
        time.sleep(0.05)
    return env


def _start(
    command: list[str], env: dict[str, str], folder: Path, log: str
) -> subprocess.Popen[bytes]:
    with (folder / f"{log}.log").open("ab") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL)


def wait_for_bus_name(env: dict[str, str], name: str, timeout: float = 20.0) -> None:
    """Wait until `name` has an owner on the session bus `env` names."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = subprocess.run(
            ["busctl", "--user", "status", name], env=env, capture_output=True, timeout=10
        )
        if done.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{name} did not appear on the session bus")


def approve_gnome_consent(env: dict[str, str], timeout: float = 60.0) -> threading.Thread:
    """Answer GNOME's remote-desktop dialog as a user would, on a thread; returns it."""

    def answer() -> None:
        switched = subprocess.run(
            [atspi.SYSTEM_PYTHON, str(_CONSENT_SCRIPT), str(timeout)],
            env={k: v for k, v in env.items() if k != "PYTHONPATH"},
            capture_output=True,
            timeout=timeout + 10,
            check=False,
        )
        if switched.returncode != 0:
            print("no consent dialog:", switched.stdout, switched.stderr)
        compositor_keys(env, [0xFFE9, 0x73])  # Alt+S: "_Share"

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


def refuse_gnome_consent(env: dict[str, str], timeout: float = 60.0) -> threading.Thread:
    """Answer GNOME's remote-desktop dialog with Cancel (through the accessibility bus), on
    a thread; returns it. Its ``refused`` attribute says whether a dialog was answered."""

    def answer() -> None:
        done = subprocess.run(
            [atspi.SYSTEM_PYTHON, str(_CONSENT_SCRIPT), str(timeout), "refuse"],
            env={k: v for k, v in env.items() if k != "PYTHONPATH"},
            capture_output=True,
            timeout=timeout + 10,
            check=False,
        )
        thread.refused = done.returncode == 0  # type: ignore[attr-defined]

    thread = threading.Thread(target=answer, daemon=True)
    thread.refused = False  # type: ignore[attr-defined]
    thread.start()
    return thread


def end_remote_control(env: dict[str, str], name: str, session: str) -> None:
    """End a RemoteDesktop session from the desktop's side, as its "stop sharing" does: the
    portal backend closes its session, and the portal tells the client (Session.Closed)."""
    subprocess.run(
        ["busctl", "--user", "call", f"org.freedesktop.impl.portal.desktop.{name.lower()}",
         session, "org.freedesktop.impl.portal.Session", "Close"],
        env=env, capture_output=True, timeout=10, check=True,
    )  # fmt: skip


def compositor_keys(env: dict[str, str], keys: list[int]) -> None:
    """Press ``keys`` together and release them, on mutter's own remote-desktop keyboard
    (org.gnome.Mutter.RemoteDesktop: the compositor's input path, no portal)."""
    with held_compositor_keys(env, keys):
        pass


@contextlib.contextmanager
def held_compositor_keys(env: dict[str, str], keys: list[int]) -> Iterator[None]:
    """``keys`` held down together on mutter's own remote-desktop keyboard while the block
    runs, released in reverse order after it."""
    with compositor_keyboard(env) as send:
        for key in keys:
            send(key, True)
        try:
            yield
        finally:
            for key in reversed(keys):
                send(key, False)
            time.sleep(0.2)


@contextlib.contextmanager
def compositor_keyboard(env: dict[str, str]) -> Iterator[Callable[[int, bool], None]]:
    """Mutter's own remote-desktop keyboard (org.gnome.Mutter.RemoteDesktop: the
    compositor's input path, no portal), as ``send(keysym, pressed)``."""
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    name = "org.gnome.Mutter.RemoteDesktop"
    connection = open_dbus_connection(bus=env["DBUS_SESSION_BUS_ADDRESS"])
    try:
        root = DBusAddress("/org/gnome/Mutter/RemoteDesktop", bus_name=name, interface=name)
        reply = connection.send_and_get_reply(new_method_call(root, "CreateSession"), timeout=5)
        session = DBusAddress(str(reply.body[0]), bus_name=name, interface=f"{name}.Session")
        connection.send_and_get_reply(new_method_call(session, "Start"), timeout=5)

        def send(key: int, pressed: bool) -> None:
            message = new_method_call(session, "NotifyKeyboardKeysym", "ub", (key, pressed))
            connection.send_and_get_reply(message, timeout=5)

        send(0xFFE1, True)  # the seat gets this keyboard on its first key; that one may be lost
        send(0xFFE1, False)
        time.sleep(0.5)
        yield send
    finally:
        connection.close()


def which(tool: str) -> bool:
    return shutil.which(tool) is not None
