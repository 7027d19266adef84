"""Which desktop's portal backend would serve an interface in this session, read from the
backends' ``.portal`` files as the portal frontend reads them: a backend serves the
desktops its ``UseIn`` names. The frontend also lists an interface that only another
desktop's backend has (Debian 12's, with Plasma's portal installed under GNOME): calls
then fail, so the interface being listed is not enough to say it works."""

from __future__ import annotations

import configparser
from collections.abc import Mapping
from pathlib import Path

PORTALS_DIR = Path("/usr/share/xdg-desktop-portal/portals")


def backends_for(interface: str, env: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Every installed backend implementing ``interface`` (the portal's ``impl`` name), by
    file name, with the desktops it is for (lower case)."""
    return {name: use_in for name, _, use_in in _backends(interface, env)}


def serving_names(interface: str, env: Mapping[str, str]) -> list[str]:
    """The bus names of the backends that serve ``interface`` for this session's desktop."""
    desktops = _desktops(env)
    return [bus for _, bus, use_in in _backends(interface, env) if desktops & set(use_in)]


def _backends(interface: str, env: Mapping[str, str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(file name, bus name, desktops) of each installed backend implementing ``interface``."""
    folder = Path(env.get("XDG_DESKTOP_PORTAL_DIR") or PORTALS_DIR)
    found = []
    for path in sorted(folder.glob("*.portal")):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error, UnicodeDecodeError):
            continue
        section = parser["portal"] if parser.has_section("portal") else {}
        interfaces = {name.strip() for name in section.get("Interfaces", "").split(";")}
        if interface in interfaces:
            use_in = tuple(d.strip().lower() for d in section.get("UseIn", "").split(";"))
            found.append((path.stem, section.get("DBusName", ""), tuple(d for d in use_in if d)))
    return found


def _desktops(env: Mapping[str, str]) -> set[str]:
    return {d.strip().lower() for d in env.get("XDG_CURRENT_DESKTOP", "").split(":")}


def serves_here(interface: str, env: Mapping[str, str]) -> str | None:
    """Why no backend for this session's desktop implements ``interface`` (one line), or
    None when one does."""
    desktops = _desktops(env)
    backends = backends_for(interface, env)
    if any(desktops & set(use_in) for use_in in backends.values()):
        return None
    name = interface.rsplit(".", 1)[-1]
    others = ", ".join(sorted(backends)) or "none"
    here = env.get("XDG_CURRENT_DESKTOP") or "this desktop"
    return f"no {name} portal backend for {here} (installed for others: {others})"
