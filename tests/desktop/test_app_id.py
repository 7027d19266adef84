"""Voxtray's app ID and its desktop entry: the entry a desktop finds for it (an installed
one, else the user's own, written to run this Voxtray), read back by GLib's own desktop
entry loader (what the portal uses to accept the ID), and the registration call."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.atspi import SYSTEM_PYTHON
from voxtray.desktop import app_id
from voxtray.desktop.app_id import APP_ID, ENTRY, ensure_entry, installed_entry, register
from voxtray.desktop.portal import PortalError
from voxtray.errors import DiskError


class FakeLink:
    """A portal connection that records calls, and refuses them when given a refusal; with
    no registry (`registry=False`), as xdg-desktop-portal before 1.19."""

    def __init__(self, refusal: str | None = None, registry: bool = True) -> None:
        self.refusal = refusal
        self.registry = registry
        self.calls: list[tuple[str, str, tuple[object, ...]]] = []

    def property(self, interface: str, name: str) -> object:
        if not self.registry:
            raise PortalError("Get refused: org.freedesktop.DBus.Error.UnknownInterface")
        return 1

    def call(
        self, interface: str, method: str, signature: str, body: tuple[object, ...]
    ) -> tuple[object, ...]:
        self.calls.append((interface, method, body))
        if self.refusal:
            raise PortalError(self.refusal)
        return ()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_DATA_DIRS": str(tmp_path / "system")}


def _glib_finds(env: dict[str, str]) -> str:
    """What GLib's desktop entry loader (GDesktopAppInfo) makes of the ID here: its
    command line, or "" when it finds no usable entry."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{SYSTEM_PYTHON} with PyGObject is needed to read the entry as GLib does")
    script = (
        "from gi.repository import Gio\n"
        f"info = Gio.DesktopAppInfo.new({ENTRY!r})\n"
        "print(info.get_commandline() if info else '')\n"
    )
    done = subprocess.run(
        [SYSTEM_PYTHON, "-c", script], env={**env, "PATH": os.environ["PATH"]},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_an_installed_entry_the_users_own_runs_this_voxtray(env: dict[str, str]) -> None:
    assert installed_entry(env) is None
    written = ensure_entry(env)
    assert written == Path(env["XDG_DATA_HOME"]) / "applications" / ENTRY
    assert installed_entry(env) == written
    assert _glib_finds(env) == f"{sys.executable} -m voxtray"  # found, though off the menus
    assert "NoDisplay=true" in written.read_text()
    before = written.stat().st_mtime_ns
    assert ensure_entry(env) == written
    assert written.stat().st_mtime_ns == before  # up to date: not written again


def test_an_installed_entry_is_used_as_it_is_and_replaces_voxtrays_own(
    env: dict[str, str],
) -> None:
    own = ensure_entry(env)  # run from a checkout first
    system = Path(env["XDG_DATA_DIRS"]) / "applications" / ENTRY
    system.parent.mkdir(parents=True)
    system.write_text(f"[Desktop Entry]\nType=Application\nName=Voxtray\nExec={sys.executable}\n")
    assert ensure_entry(env) == system  # then the package installed
    assert not own.exists()
    assert _glib_finds(env) == sys.executable


def test_the_users_own_entry_is_kept_and_voxtrays_is_brought_up_to_date(
    env: dict[str, str],
) -> None:
    own = Path(env["XDG_DATA_HOME"]) / "applications" / ENTRY
    own.parent.mkdir(parents=True)
    mine = "[Desktop Entry]\nType=Application\nName=My Voxtray\nExec=/opt/voxtray/run\n"
    own.write_text(mine)
    assert ensure_entry(env) == own
    assert own.read_text() == mine
    stale = ensure_entry({**env, "XDG_DATA_HOME": str(own.parent.parent.parent / "other")})
    stale.write_text(stale.read_text().replace(sys.executable, "/old/python"))
    ensure_entry({**env, "XDG_DATA_HOME": str(stale.parent.parent)})
    assert "/old/python" not in stale.read_text()
    assert f"Exec={sys.executable} -m voxtray" in stale.read_text()


def test_an_entry_that_cannot_be_written_is_one_line_and_no_registration(
    env: dict[str, str], tmp_path: Path
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the data folder should be")
    env["XDG_DATA_HOME"] = str(blocked)
    with pytest.raises(DiskError) as raised:
        ensure_entry(env)
    assert "\n" not in str(raised.value)

    link = FakeLink()
    assert register(link, env) == str(raised.value)
    assert link.calls == []


def test_registering_gives_the_portal_the_id_or_says_why_not(env: dict[str, str]) -> None:
    link = FakeLink()
    assert register(link, env) is None
    assert link.calls == [(app_id.REGISTRY, "Register", (APP_ID, {}))]
    refused = "Register refused: org.freedesktop.portal.Error.Failed: App info not found"
    assert register(FakeLink(refused), env) == refused


def test_a_portal_without_the_registry_gets_no_entry_written(env: dict[str, str]) -> None:
    link = FakeLink(registry=False)
    assert "no app registry" in str(register(link, env))
    assert link.calls == []
    assert installed_entry(env) is None
