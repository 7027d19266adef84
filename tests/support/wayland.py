"""A real Wayland desktop for the end-to-end tests: headless sway with waybar's tray.

sway runs on wlroots' headless backend with the pixman renderer (no GPU, no seat devices),
in a private runtime folder (0700) with a private session bus. On it:

- waybar with only its "tray" module, which owns ``org.kde.StatusNotifierWatcher``: the
  StatusNotifierItem host a Qt tray icon registers with;
- a ``wtype -s 3600000`` kept running: with no physical keyboard every wtype run adds and
  removes the seat's keyboard, and the next run's first key is lost about half the time
  unless one virtual keyboard stays;
- optionally Xwayland (``DISPLAY`` then comes from sway's own environment);
- the Qt text window of ``tests/support/x11.py`` as the focused typing target.

Measured details that matter:

- sway refuses to start as root. ``unshare --user --map-user=1000 --map-group=1000``
  starts it as uid 1000 of a user namespace; everything else stays root, and what sway
  bindings ``exec`` still has uid 0 when a root process checks SO_PEERCRED.
- The session bus config has no ``<servicedir>``, so nothing (at-spi) is activated on it
  and left behind; every process here is our child and is ended by its process id.
- Qt window flags (Tool, WindowDoesNotAcceptFocus) are not honoured by sway: what maps
  takes the focus. ``focused()`` reads sway's tree to see who has it.

Debian packages: sway wtype wl-clipboard waybar grim xwayland (dbus and busctl are there).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.process import stop_process
from tests.support.waiting import wait_for
from tests.support.x11 import TITLE, TargetWindow

PACKAGES = "sway wtype wl-clipboard waybar grim xwayland"
TOOLS = ("sway", "swaymsg", "wtype", "wl-copy", "wl-paste", "waybar", "grim", "unshare")
WATCHER = "org.kde.StatusNotifierWatcher"
WIDTH, HEIGHT = 1280, 720
BAR_HEIGHT = 26
_START_TIMEOUT_S = 20.0
# Variables a client must not inherit from this process or from a desktop it runs under.
SESSION_VARS = (
    "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "SWAYSOCK", "I3SOCK", "QT_QPA_PLATFORM",
    "DBUS_SESSION_BUS_ADDRESS", "XDG_SESSION_TYPE", "XDG_CURRENT_DESKTOP", "XDG_RUNTIME_DIR",
)  # fmt: skip

_DBUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

_SWAY_CONFIG = """output HEADLESS-1 resolution {width}x{height}
xwayland {xwayland}
"""

_WAYBAR_CONFIG = {
    "layer": "top",
    "position": "top",
    "height": BAR_HEIGHT,
    "modules-left": [],
    "modules-center": [],
    "modules-right": ["tray"],
    "tray": {"spacing": 4, "icon-size": 20},
}


def missing_tools() -> list[str]:
    tools = (*TOOLS, "dbus-daemon", "busctl", "Xwayland")
    return [tool for tool in tools if shutil.which(tool) is None]


@dataclass
class WaylandDesktop:
    """A running headless sway session and the processes that make it a desktop.

    Attributes:
        runtime_dir: The session's XDG_RUNTIME_DIR (0700): sockets, configs, logs.
        wayland_display: The WAYLAND_DISPLAY name (a socket in ``runtime_dir``).
        swaysock: sway's IPC socket.
        bus: The private session bus address.
        x_display: Xwayland's DISPLAY, or None when sway runs without Xwayland.
    """

    runtime_dir: Path
    wayland_display: str
    swaysock: str
    bus: str
    x_display: str | None = None
    desktop_name: str = "sway"
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self, base: dict[str, str] | None = None, *, x11: bool = False) -> dict[str, str]:
        """The environment of a program started in this session, as a login would give it.

        Args:
            base: Variables to start from (``os.environ`` if None); whatever names another
                session, and QT_QPA_PLATFORM, is dropped.
            x11: Include Xwayland's DISPLAY (the session must have one).
        """
        source = os.environ if base is None else base
        env = {k: v for k, v in source.items() if k not in SESSION_VARS}
        env.update(
            XDG_RUNTIME_DIR=str(self.runtime_dir),
            WAYLAND_DISPLAY=self.wayland_display,
            DBUS_SESSION_BUS_ADDRESS=self.bus,
            XDG_SESSION_TYPE="wayland",
            XDG_CURRENT_DESKTOP=self.desktop_name,
            NO_AT_BRIDGE="1",
        )
        if self.swaysock:
            env["SWAYSOCK"] = self.swaysock
        if x11:
            if self.x_display is None:
                raise RuntimeError("this session runs without Xwayland")
            env["DISPLAY"] = self.x_display
        return env

    def run(self, *args: str, stdin: bytes | None = None, timeout: float = 20) -> str:
        """Run a client of the session; returns its standard output."""
        done = subprocess.run(
            list(args), input=stdin, env=self.env(), capture_output=True, timeout=timeout
        )
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).decode(errors="replace").strip()
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {detail}")
        return done.stdout.decode(errors="replace")

    def swaymsg(self, *args: str) -> Any:
        return json.loads(self.run("swaymsg", "--raw", *args))

    def tree(self) -> dict[str, Any]:
        tree: dict[str, Any] = self.swaymsg("-t", "get_tree")
        return tree

    def windows(self) -> list[dict[str, Any]]:
        """Every window (view) in sway's tree, floating or tiled."""
        return [node for node in _nodes(self.tree()) if node.get("pid") is not None]

    def focused(self) -> dict[str, Any] | None:
        """The node that has the keyboard focus, or None."""
        return next((node for node in _nodes(self.tree()) if node.get("focused")), None)

    def wtype(self, *args: str, stdin: bytes | None = None) -> None:
        self.run("wtype", *args, stdin=stdin)

    def clipboard(self, mime: str | None = None) -> bytes | None:
        """The clipboard's content (as ``mime``, else as text), or None when it is empty."""
        done = subprocess.run(
            ["wl-paste", "--no-newline", *(["--type", mime] if mime else [])],
            env=self.env(),
            capture_output=True,
            timeout=10,
        )
        return done.stdout if done.returncode == 0 else None

    def set_clipboard(self, data: bytes, mime: str | None = None) -> None:
        # wl-copy forks a server that lives until another client takes the clipboard or
        # the compositor goes away: it ends with the session.
        subprocess.run(
            ["wl-copy", *(["--type", mime] if mime else [])],
            input=data,
            env=self.env(),
            check=True,
            timeout=10,
        )

    def tray_items(self) -> list[str]:
        """The StatusNotifierItems registered with waybar's watcher ("BUS/PATH")."""
        out = self.run(
            "busctl", "--user", "--json=short", "get-property", WATCHER,
            "/StatusNotifierWatcher", WATCHER, "RegisteredStatusNotifierItems",
        )  # fmt: skip
        items: list[str] = json.loads(out)["data"]
        return items

    def item_property(self, item: str, name: str) -> Any:
        service, _, path = item.partition("/")
        out = self.run(
            "busctl", "--user", "--json=short", "get-property", service, f"/{path}",
            "org.kde.StatusNotifierItem", name,
        )  # fmt: skip
        return json.loads(out)["data"]

    def activate(self, item: str) -> None:
        """What a left click on the tray icon sends: StatusNotifierItem.Activate."""
        service, _, path = item.partition("/")
        self.run(
            "busctl", "--user", "call", service, f"/{path}", "org.kde.StatusNotifierItem",
            "Activate", "ii", "0", "0",
        )  # fmt: skip

    def click_menu(self, item: str, label: str) -> None:
        """Click the tray item's menu entry whose label starts with ``label`` (dbusmenu)."""
        service = item.partition("/")[0]
        menu = str(self.item_property(item, "Menu"))
        out = self.run(
            "busctl", "--user", "--json=short", "--", "call", service, menu,
            "com.canonical.dbusmenu", "GetLayout", "iias", "0", "-1", "0",
        )  # fmt: skip
        entry = _menu_entry(json.loads(out)["data"][1], label)
        if entry is None:
            raise RuntimeError(f"no menu entry {label!r}")
        self.run(
            "busctl", "--user", "call", service, menu, "com.canonical.dbusmenu", "Event",
            "isvu", str(entry), "clicked", "s", "", "0",
        )  # fmt: skip

    def screenshot(self, path: Path) -> Path:
        self.run("grim", str(path))
        return path

    def stop(self) -> None:
        """End every process of the session, newest first, by its process id."""
        for process in reversed(self.processes):
            stop_process(process)
        self.processes.clear()


class WaylandTarget(TargetWindow):
    """The Qt text window as a native Wayland client, or on Xwayland with ``x11``."""

    def __init__(self, desktop: WaylandDesktop, workdir: Path, *, x11: bool = False) -> None:
        env = desktop.env(x11=x11)
        env["QT_QPA_PLATFORM"] = "xcb" if x11 else "wayland"
        self.desktop = desktop
        super().__init__(desktop.x_display or "", workdir, env=env)
        wait_for(lambda: self.node() is not None, 15, "the target window did not map")

    def node(self) -> dict[str, Any] | None:
        return next((w for w in self.desktop.windows() if w.get("name") == TITLE), None)

    def focus(self) -> None:
        self.desktop.swaymsg(f'[title="^{TITLE}$"]', "focus")
        wait_for(self.has_focus, 5, "the target window did not get the focus")

    def has_focus(self) -> bool:
        node = self.desktop.focused()
        return node is not None and node.get("name") == TITLE


def skip_without_tools() -> None:
    """Skip the calling test, naming the packages, where sway's tools are missing."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"no Wayland desktop tools ({', '.join(missing)}): apt-get install {PACKAGES}")


@contextlib.contextmanager
def wayland_desktop(*, xwayland: bool = False) -> Iterator[WaylandDesktop]:
    """Start the session (about a second); everything is ended on leaving."""
    runtime_dir = Path(tempfile.mkdtemp(prefix="voxtray-wl-"))
    runtime_dir.chmod(0o700)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        bus = _start_bus(runtime_dir, processes)
        sway = _start_sway(runtime_dir, bus, xwayland, processes)
        desktop = WaylandDesktop(runtime_dir, *_wait_for_sway(runtime_dir, sway), bus)
        desktop.processes = processes
        _start_waybar(desktop)
        processes.append(_popen(["wtype", "-s", "3600000"], desktop.env(), runtime_dir))
        if xwayland:
            desktop.x_display = _x_display(desktop)
        yield desktop
    finally:
        for process in reversed(processes):
            stop_process(process)
        shutil.rmtree(runtime_dir, ignore_errors=True)


@contextlib.contextmanager
def other_compositor(name: str) -> Iterator[WaylandDesktop]:
    """GNOME's mutter (``"GNOME"``) or KDE's kwin (``"KDE"``), headless, without a panel.

    Neither offers the virtual-keyboard protocol wtype uses. kwin_wayland carries a file
    capability (cap_sys_resource) that this container may not grant, so a copy without it
    runs (it must still be called kwin_wayland: its Qt platform plugin checks the name).
    Skips the calling test with the reason when the compositor is missing or will not start.
    """
    tool = {"GNOME": "mutter", "KDE": "kwin_wayland"}[name]
    if shutil.which(tool) is None:
        package = {"GNOME": "mutter", "KDE": "kwin-wayland"}[name]
        pytest.skip(f"{tool} not installed: apt-get install {package}")
    runtime_dir = Path(tempfile.mkdtemp(prefix=f"voxtray-{tool}-"))
    runtime_dir.chmod(0o700)
    processes: list[subprocess.Popen[bytes]] = []
    socket = f"wayland-{tool}"
    try:
        bus = _start_bus(runtime_dir, processes)
        env = {k: v for k, v in os.environ.items() if k not in SESSION_VARS}
        env.update(XDG_RUNTIME_DIR=str(runtime_dir), DBUS_SESSION_BUS_ADDRESS=bus)
        if tool == "mutter":
            command = ["mutter", "--headless", "--wayland", "--no-x11", "--virtual-monitor",
                       f"{WIDTH}x{HEIGHT}", f"--wayland-display={socket}"]  # fmt: skip
        else:
            copy = runtime_dir / "bin" / "kwin_wayland"
            copy.parent.mkdir()
            # kwin keeps global shortcuts (kglobalshortcutsrc) and its settings there
            env["XDG_CONFIG_HOME"] = str(runtime_dir / "config")
            shutil.copy(str(shutil.which(tool)), copy)
            command = [str(copy), "--virtual", "--socket", socket,
                       "--width", str(WIDTH), "--height", str(HEIGHT)]  # fmt: skip
        compositor = _popen(command, env, runtime_dir, tool)
        processes.append(compositor)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not (runtime_dir / socket).exists() and compositor.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if not (runtime_dir / socket).exists():
            pytest.skip(f"{tool} did not start: {_log_tail(runtime_dir, tool)}")
        yield WaylandDesktop(runtime_dir, socket, "", bus, desktop_name=name, processes=processes)
    finally:
        for process in reversed(processes):
            stop_process(process)
        shutil.rmtree(runtime_dir, ignore_errors=True)


def _start_bus(runtime_dir: Path, processes: list[subprocess.Popen[bytes]]) -> str:
    config = runtime_dir / "bus.conf"
    config.write_text(_DBUS_CONFIG.format(socket=runtime_dir / "bus"))
    daemon = subprocess.Popen(
        ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    processes.append(daemon)
    assert daemon.stdout is not None
    address = daemon.stdout.readline().decode().strip()
    daemon.stdout.close()
    if not address:
        raise RuntimeError("dbus-daemon did not print its address")
    return address


def _start_sway(
    runtime_dir: Path, bus: str, xwayland: bool, processes: list[subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes]:
    config = runtime_dir / "sway.conf"
    mode = "enable" if xwayland else "disable"
    config.write_text(_SWAY_CONFIG.format(width=WIDTH, height=HEIGHT, xwayland=mode))
    env = {k: v for k, v in os.environ.items() if k not in SESSION_VARS}
    env.update(
        XDG_RUNTIME_DIR=str(runtime_dir),
        DBUS_SESSION_BUS_ADDRESS=bus,
        WLR_BACKENDS="headless",
        WLR_RENDERER="pixman",
        WLR_LIBINPUT_NO_DEVICES="1",
    )
    # unshare execs sway, so the process id is sway's.
    namespace = ["unshare", "--user", "--map-user=1000", "--map-group=1000"]
    command = [*namespace, "sway", "-c", str(config)]
    sway = _popen(command, env, runtime_dir, "sway")
    processes.append(sway)
    return sway


def _wait_for_sway(runtime_dir: Path, sway: subprocess.Popen[bytes]) -> tuple[str, str]:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline and sway.poll() is None:
        displays = [p.name for p in runtime_dir.glob("wayland-*") if p.suffix != ".lock"]
        sockets = list(runtime_dir.glob("sway-ipc.*.sock"))
        if displays and sockets:
            check = subprocess.run(
                ["swaymsg", "-s", str(sockets[0]), "-t", "get_outputs"],
                capture_output=True,
                timeout=10,
            )
            if check.returncode == 0 and b"HEADLESS-1" in check.stdout:
                return displays[0], str(sockets[0])
        time.sleep(0.05)
    raise RuntimeError(f"sway did not start: {_log_tail(runtime_dir, 'sway')}")


def _start_waybar(desktop: WaylandDesktop) -> None:
    config = desktop.runtime_dir / "waybar.json"
    config.write_text(json.dumps(_WAYBAR_CONFIG))
    style = desktop.runtime_dir / "waybar.css"
    style.write_text("* { font-size: 12px; } window#waybar { background: #202428; }")
    command = ["waybar", "-c", str(config), "-s", str(style)]
    desktop.processes.append(_popen(command, desktop.env(), desktop.runtime_dir))
    wait_for(lambda: _has_watcher(desktop), _START_TIMEOUT_S, "waybar's tray watcher did not start")


def _has_watcher(desktop: WaylandDesktop) -> bool:
    try:
        desktop.tray_items()
    except RuntimeError:
        return False
    return True


def _x_display(desktop: WaylandDesktop) -> str:
    """Xwayland's DISPLAY, as sway hands it to the programs it starts."""
    out = desktop.runtime_dir / "x-display"
    desktop.swaymsg("exec", f'printf %s "$DISPLAY" > {out}.part && mv {out}.part {out}')
    wait_for(out.exists, 10, "sway did not report Xwayland's DISPLAY")
    display = out.read_text().strip()
    if not display:
        raise RuntimeError("sway runs without Xwayland")
    return display


def _popen(
    command: list[str], env: dict[str, str], runtime_dir: Path, name: str | None = None
) -> subprocess.Popen[bytes]:
    """A child whose output goes to ``runtime_dir/NAME.log``."""
    with (runtime_dir / f"{name or command[0]}.log").open("ab") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)


def _log_tail(runtime_dir: Path, name: str) -> str:
    path = runtime_dir / f"{name}.log"
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return " | ".join(lines[-3:]) or "no output"


def _menu_entry(layout: list[Any], label: str) -> int | None:
    """The id of the first dbusmenu entry (id, properties, children) with that label, as
    a user reads it: dbusmenu marks a mnemonic with "_" ("_Settings…") and doubles a real one."""
    entry_id, properties, children = layout
    shown = str(properties.get("label", {}).get("data", ""))
    shown = shown.replace("__", "\0").replace("_", "").replace("\0", "_")
    if shown.startswith(label):
        return int(entry_id)
    for child in children:
        found = _menu_entry(child["data"], label)
        if found is not None:
            return found
    return None


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("nodes", []) + node.get("floating_nodes", []):
        yield from _nodes(child)
