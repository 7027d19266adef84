"""Which backend serves a portal interface here, read from the ``.portal`` files as the
frontend reads them: Debian 12's own files, and a folder of them that a test writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from voxtray.desktop.portal_backends import PORTALS_DIR, backends_for, serves_here, serving_names

SHORTCUTS = "org.freedesktop.impl.portal.GlobalShortcuts"


def _portal(folder: Path, name: str, interfaces: str, use_in: str) -> None:
    (folder / f"{name}.portal").write_text(
        f"[portal]\nDBusName=org.freedesktop.impl.portal.desktop.{name}\n"
        f"Interfaces={interfaces}\nUseIn={use_in}\n",
        encoding="utf-8",
    )


def test_a_backend_serves_the_desktops_its_use_in_names(tmp_path: Path) -> None:
    _portal(tmp_path, "kde", f"org.freedesktop.impl.portal.RemoteDesktop;{SHORTCUTS}", "KDE")
    _portal(tmp_path, "hyprland", f"{SHORTCUTS};", "wlroots;Hyprland;sway")
    _portal(tmp_path, "gnome", "org.freedesktop.impl.portal.RemoteDesktop;", "gnome")
    (tmp_path / "broken.portal").write_text("no section\n", encoding="utf-8")
    env = {"XDG_DESKTOP_PORTAL_DIR": str(tmp_path)}
    assert backends_for(SHORTCUTS, env) == {
        "hyprland": ("wlroots", "hyprland", "sway"),
        "kde": ("kde",),
    }
    assert serves_here(SHORTCUTS, {**env, "XDG_CURRENT_DESKTOP": "KDE"}) is None
    assert serves_here(SHORTCUTS, {**env, "XDG_CURRENT_DESKTOP": "Hyprland"}) is None
    assert serves_here(SHORTCUTS, {**env, "XDG_CURRENT_DESKTOP": "ubuntu:GNOME"}) == (
        "no GlobalShortcuts portal backend for ubuntu:GNOME (installed for others: hyprland, kde)"
    )


@pytest.mark.skipif(not PORTALS_DIR.is_dir(), reason="no portal backends installed")
def test_debian_12s_files() -> None:
    """Plasma's backend has GlobalShortcuts and GNOME 43's has not: under GNOME the
    frontend still lists the interface, and calls fail."""
    if not (PORTALS_DIR / "kde.portal").exists() or not (PORTALS_DIR / "gnome.portal").exists():
        pytest.skip("xdg-desktop-portal-kde and -gnome are not both installed")
    assert serves_here(SHORTCUTS, {"XDG_CURRENT_DESKTOP": "KDE"}) is None
    assert serves_here(SHORTCUTS, {"XDG_CURRENT_DESKTOP": "GNOME"}) is not None


def test_the_serving_backends_are_named_by_their_bus_names(tmp_path: Path) -> None:
    """What the shortcuts backend's stale sessions are ended at, after a portal restart."""
    _portal(tmp_path, "kde", SHORTCUTS, "KDE")
    _portal(tmp_path, "gnome", f"org.freedesktop.impl.portal.RemoteDesktop;{SHORTCUTS}", "gnome")
    env = {"XDG_DESKTOP_PORTAL_DIR": str(tmp_path), "XDG_CURRENT_DESKTOP": "ubuntu:GNOME"}
    assert serving_names(SHORTCUTS, env) == ["org.freedesktop.impl.portal.desktop.gnome"]
    assert serving_names(SHORTCUTS, {**env, "XDG_CURRENT_DESKTOP": "sway"}) == []
