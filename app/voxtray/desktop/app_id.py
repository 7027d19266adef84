"""Voxtray's application ID, and the desktop entry through which a desktop knows it.

A desktop's portal knows a program that runs outside a sandbox only by the ID the program
registers on its bus connection (``org.freedesktop.host.portal.Registry``, from
xdg-desktop-portal 1.19), and it takes only an ID whose desktop entry it can find, with an
``Exec`` that exists. GNOME 48 binds global shortcuts only for such a program: its Settings
discards a request from an unnamed one ("invalid app_id"). The packages install the entry;
a Voxtray run from a checkout or a pip install writes its own in the user's data folder,
running the Python it runs on.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from voxtray.desktop.autostart import desktop_entry, launch_command, xdg_base
from voxtray.desktop.portal import PortalError
from voxtray.errors import DiskError, disk_error
from voxtray.fileio import atomic_write

APP_ID = "org.voxtray.Voxtray"
"""The application ID: the desktop entry's name and the Wayland app_id of every window."""
ENTRY = f"{APP_ID}.desktop"
REGISTRY = "org.freedesktop.host.portal.Registry"
_HIDDEN = ("NoDisplay=true",)
"""Voxtray's own entry names the app for the desktop, and stays out of its menus: nothing
removes it when a checkout or a pip install goes."""
_WRITTEN_BY_VOXTRAY = "X-Voxtray-Written=true"
"""Marks an entry Voxtray wrote for itself, which it keeps pointing at the running Python."""


class Registering(Protocol):
    """What registering needs of a portal connection (`voxtray.desktop.portal.PortalLink`)."""

    def call(
        self, interface: str, method: str, signature: str, body: tuple[object, ...]
    ) -> tuple[object, ...]: ...

    def property(self, interface: str, name: str) -> object: ...


def data_home(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME``, ``~/.local/share`` when unset or relative."""
    return xdg_base(env, "XDG_DATA_HOME", ".local/share")


def data_dirs(env: Mapping[str, str]) -> list[Path]:
    """Where desktops look for entries, the user's own folder first."""
    system = env.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
    return [data_home(env), *(Path(d) for d in system.split(":") if os.path.isabs(d))]


def installed_entry(env: Mapping[str, str]) -> Path | None:
    """The entry a desktop finds for Voxtray's ID, or None."""
    return _first_entry(data_dirs(env))


def _first_entry(folders: list[Path]) -> Path | None:
    entries = (folder / "applications" / ENTRY for folder in folders)
    return next((entry for entry in entries if entry.is_file()), None)


def ensure_entry(env: Mapping[str, str]) -> Path:
    """The entry the desktop finds for Voxtray's ID: the user's own as they wrote it, else
    an installed one (a package's), else the one Voxtray writes for itself in the user's
    folder, kept up to date with the Voxtray that runs and removed once a package's exists.

    Raises:
        DiskError: Voxtray's entry cannot be written.
    """
    own = data_home(env) / "applications" / ENTRY
    current = _reads(own)
    ours = _WRITTEN_BY_VOXTRAY.encode() in current
    if current and not ours:
        return own  # the user's own entry, kept as they wrote it
    installed = _first_entry(data_dirs(env)[1:])  # a package's, in the system's folders
    if installed is not None:
        if ours:
            with contextlib.suppress(OSError):
                own.unlink()
        return installed
    wanted = desktop_entry(launch_command(), *_HIDDEN, _WRITTEN_BY_VOXTRAY)
    if current == wanted:
        return own
    try:
        atomic_write(own, wanted, 0o644)
    except OSError as exc:
        raise disk_error(exc, str(own)) from exc
    return own


def register(link: Registering, env: Mapping[str, str]) -> str | None:
    """Give the portal Voxtray's ID on `link`, before any other portal call there; why not
    (one line), or None when it took it. A portal older than the registry (1.19) has none
    to give it to, and knows the program by its process alone: no entry is written there."""
    try:
        version = link.property(REGISTRY, "version")
    except PortalError:
        version = None
    if not isinstance(version, int):
        return "the desktop's portal has no app registry (xdg-desktop-portal before 1.19)"
    try:
        ensure_entry(env)
        link.call(REGISTRY, "Register", "sa{sv}", (APP_ID, {}))
    except (DiskError, PortalError) as exc:
        return str(exc)
    return None


def _reads(path: Path) -> bytes:
    try:
        return path.read_bytes() if path.is_file() else b""
    except OSError:
        return b""
