"""The desktop session judged from environment mappings, and the import structure around it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.audio import REPO
from voxtray.desktop.session import Desktop, DesktopSession, DisplayServer

APP = REPO / "app" / "voxtray"


@pytest.mark.parametrize(
    ("env", "platform", "server", "xwayland"),
    [
        ({"DISPLAY": ":0", "XDG_SESSION_TYPE": "x11"}, "linux", DisplayServer.X11, False),
        ({"DISPLAY": ":1"}, "linux", DisplayServer.X11, False),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "linux", DisplayServer.WAYLAND, True),
        ({"WAYLAND_DISPLAY": "wayland-1"}, "linux", DisplayServer.WAYLAND, False),
        ({"XDG_SESSION_TYPE": "wayland"}, "linux", DisplayServer.WAYLAND, False),
        ({"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"}, "linux", DisplayServer.WAYLAND, True),
        ({"XDG_SESSION_TYPE": "x11"}, "linux", DisplayServer.NONE, False),  # no DISPLAY
        ({"XDG_SESSION_TYPE": "tty"}, "linux", DisplayServer.NONE, False),
        ({"WAYLAND_DISPLAY": ""}, "linux", DisplayServer.NONE, False),
        ({}, "linux", DisplayServer.NONE, False),
        ({"DISPLAY": ":0"}, "freebsd14", DisplayServer.X11, False),
        ({"DISPLAY": ":0"}, "win32", DisplayServer.WINDOWS, False),
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "w"}, "darwin", DisplayServer.MACOS, False),
    ],
)
def test_display_server(
    env: dict[str, str], platform: str, server: DisplayServer, xwayland: bool
) -> None:
    session = DesktopSession.from_env(env, platform)
    assert session.server is server
    assert session.xwayland is xwayland
    assert session.wayland is (server is DisplayServer.WAYLAND)
    assert session.x11 is (server is DisplayServer.X11)
    assert session.native is (server in (DisplayServer.WINDOWS, DisplayServer.MACOS))
    assert session.platform == platform


@pytest.mark.parametrize(
    ("env", "desktops"),
    [
        ({"XDG_CURRENT_DESKTOP": "ubuntu:GNOME"}, (Desktop.GNOME,)),
        ({"XDG_CURRENT_DESKTOP": "KDE"}, (Desktop.KDE,)),
        ({"XDG_CURRENT_DESKTOP": "sway"}, (Desktop.SWAY,)),
        ({"XDG_CURRENT_DESKTOP": "Hyprland"}, (Desktop.HYPRLAND,)),
        ({"XDG_CURRENT_DESKTOP": "X-Cinnamon"}, (Desktop.CINNAMON,)),
        ({"XDG_CURRENT_DESKTOP": "Budgie:GNOME"}, (Desktop.BUDGIE, Desktop.GNOME)),
        ({"SWAYSOCK": "/run/user/1000/sway-ipc.sock"}, (Desktop.SWAY,)),
        ({"HYPRLAND_INSTANCE_SIGNATURE": "abc"}, (Desktop.HYPRLAND,)),
        ({"KDE_FULL_SESSION": "true"}, (Desktop.KDE,)),
        ({"XDG_SESSION_DESKTOP": "gnome"}, (Desktop.GNOME,)),
        ({"XDG_CURRENT_DESKTOP": "KDE", "KDE_FULL_SESSION": "true"}, (Desktop.KDE,)),
        ({"XDG_CURRENT_DESKTOP": "someshell"}, ()),
        ({}, ()),
    ],
)
def test_desktop(env: dict[str, str], desktops: tuple[Desktop, ...]) -> None:
    session = DesktopSession.from_env(env, "linux")
    assert session.desktops == desktops
    assert session.desktop is (desktops[0] if desktops else Desktop.UNKNOWN)


def test_session_is_a_frozen_value_and_reads_what_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-9")
    session = DesktopSession.from_env({"DISPLAY": ":3"}, "linux")
    assert session == DesktopSession(DisplayServer.X11, (), "", ":3", "linux")
    assert DesktopSession.from_env(platform="linux").wayland_display == "wayland-9"
    with pytest.raises(AttributeError):
        session.server = DisplayServer.NONE  # type: ignore[misc]


def test_session_text() -> None:
    env = {"WAYLAND_DISPLAY": "w", "DISPLAY": ":0", "XDG_CURRENT_DESKTOP": "sway"}
    assert str(DesktopSession.from_env(env, "linux")) == "sway on Wayland with XWayland"
    assert str(DesktopSession.from_env({"DISPLAY": ":0"}, "linux")) == "x11"


@pytest.mark.parametrize("package", ["voxtray.output", "voxtray.hotkeys"])
def test_importing_a_package_imports_no_backend(package: str) -> None:
    code = (
        f"import sys, {package}, {package}.base; "
        f"print(sorted(m for m in sys.modules if m.startswith('{package}.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    # Shared plumbing (hotkeys' key names; output's target, delivery, clipboard and tool
    # helpers) may come along, never a backend.
    plumbing = {
        "voxtray.hotkeys": {"base", "keys"},
        "voxtray.output": {"base", "delivery", "selection", "target", "tools"},
    }[package]
    imported = {name.removeprefix(f"{package}.") for name in ast.literal_eval(result.stdout)}
    assert "base" in imported
    assert imported <= plumbing


def _imports(path: Path) -> set[str]:
    """Every app module a file imports, at any depth (function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("voxtray"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if _module_path(sub) else node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("voxtray")}
    return found


def _module_path(name: str) -> Path | None:
    base = APP.parent.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@pytest.mark.parametrize("package", ["output", "hotkeys", "desktop"])
def test_no_import_cycles(package: str) -> None:
    modules = {
        f"app.{package}.{path.stem}": path
        for path in (APP / package).glob("*.py")
        if path.stem != "__init__"
    }
    graph = {name: _imports(path) & modules.keys() for name, path in modules.items()}

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, " -> ".join([*trail, name])
        for imported in graph[name]:
            visit(imported, (*trail, name))

    for name in graph:
        visit(name, ())
