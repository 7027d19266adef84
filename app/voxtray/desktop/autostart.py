"""Start at login: registers the app with the desktop's login items.

Linux and other XDG desktops get `$XDG_CONFIG_HOME/autostart/voxtray.desktop`, macOS a
LaunchAgent plist in `~/Library/LaunchAgents`, Windows a value under the HKCU Run key.
"""

from __future__ import annotations

import contextlib
import os
import plistlib
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from voxtray.errors import disk_error
from voxtray.fileio import atomic_write

APP_NAME = "Voxtray"
_LAUNCH_AGENT_LABEL = "io.github.voxtray"
_RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"


def set_start_at_login(enabled: bool, command: list[str]) -> Path | None:
    """Register (or unregister) `command` to run when the user logs in.

    Linux and other XDG desktops get `$XDG_CONFIG_HOME/autostart/voxtray.desktop`; macOS a
    LaunchAgent plist in `~/Library/LaunchAgents`; Windows a value under the HKCU Run key.

    Args:
        enabled: True to register, False to remove the registration (missing is fine).
        command: the program and its arguments, e.g. `[sys.executable, "-m", "voxtray"]`.

    Returns:
        The autostart file written or removed, or None on Windows (a registry value).

    Raises:
        ValueError: if `enabled` and `command` is empty.
        DiskError: if the entry cannot be written or removed.
    """
    if enabled and not command:
        raise ValueError("the start-at-login command is empty")
    if sys.platform == "win32":
        _set_run_key(enabled, command)
        return None
    if sys.platform == "darwin":
        return _set_file(launch_agent_path(), enabled, lambda: _launch_agent(command))
    return _set_file(xdg_autostart_path(), enabled, lambda: _desktop_entry(command))


def launch_command() -> list[str]:
    """The command that starts this Voxtray's tray app: a bundle's (the .deb's, the
    archive's) own executable, which takes no `-m`; else this Python with `-m voxtray`."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "voxtray"]


def keep_start_at_login(enabled: bool) -> Path | None:
    """At start: while start at login is on, make sure the login entry runs this Voxtray.
    An entry that is missing, or that runs another command (an older install's: bundles
    used to be given `-m voxtray`, which they refuse), is written again; an entry that is
    already right is left untouched. Returns the entry written, None if none was.

    Raises:
        DiskError: if the entry cannot be written.
    """
    if not enabled or sys.platform in ("win32", "darwin"):
        return None
    command = launch_command()
    path = xdg_autostart_path()
    wanted = _desktop_entry(command)
    try:
        # Only a small regular file is read: a FIFO or a device there must not block start.
        if path.is_file() and path.stat().st_size == len(wanted) and path.read_bytes() == wanted:
            return None
    except OSError:
        pass  # unreadable: written again below
    return set_start_at_login(True, command)


def start_at_login_enabled() -> bool:
    """Whether a login entry for Voxtray exists (it may point at an older command)."""
    if sys.platform == "win32":
        return _read_run_key() is not None
    if sys.platform == "darwin":
        return launch_agent_path().is_file()
    return xdg_autostart_path().is_file()


def xdg_autostart_path() -> Path:
    """`$XDG_CONFIG_HOME/autostart/voxtray.desktop` (`~/.config` when unset)."""
    return xdg_base(os.environ, "XDG_CONFIG_HOME", ".config") / "autostart" / "voxtray.desktop"


def xdg_base(env: Mapping[str, str], variable: str, fallback: str) -> Path:
    """The XDG base folder `variable` names, else `fallback` under the home folder; a
    relative value is ignored, as the XDG spec says."""
    value = env.get(variable, "")
    return Path(value) if os.path.isabs(value) else Path.home() / fallback


def launch_agent_path() -> Path:
    """`~/Library/LaunchAgents/<label>.plist`, the per-user macOS login item."""
    return Path.home() / "Library" / "LaunchAgents" / f"{_LAUNCH_AGENT_LABEL}.plist"


def _set_file(path: Path, enabled: bool, render: Callable[[], bytes]) -> Path:
    try:
        if enabled:
            atomic_write(path, render(), 0o644)
        else:
            path.unlink(missing_ok=True)
    except OSError as exc:
        raise disk_error(exc, str(path)) from exc
    return path


# Characters that force quoting in a desktop entry Exec value (Desktop Entry Spec, "Exec key").
_EXEC_RESERVED = frozenset(" \t\n\"'\\><~|&;$*?#()`")


def _desktop_entry(command: list[str]) -> bytes:
    return desktop_entry(command, "X-GNOME-Autostart-enabled=true")


def desktop_entry(command: list[str], *extra: str) -> bytes:
    """A desktop entry that runs `command`, with `extra` lines ("Key=value") at its end."""
    exec_line = " ".join(_exec_arg(arg) for arg in command)
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        f"Name={APP_NAME}",
        "Comment=Push-to-talk dictation",
        f"Exec={exec_line}",
        "Icon=voxtray",
        "Terminal=false",
        *extra,
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _exec_arg(arg: str) -> str:
    """One argument of an Exec value: field-code, quoting and string escapes, in that order."""
    arg = arg.replace("%", "%%")
    if not arg or any(char in _EXEC_RESERVED for char in arg):
        inner = "".join("\\" + char if char in '"`$\\' else char for char in arg)
        arg = f'"{inner}"'
    # The string-value escapes are undone before the quoting, so they are applied last.
    return arg.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def _launch_agent(command: list[str]) -> bytes:
    agent = {
        "Label": _LAUNCH_AGENT_LABEL,
        "ProgramArguments": command,
        "RunAtLoad": True,
        "ProcessType": "Interactive",
    }
    return plistlib.dumps(agent)


def _set_run_key(enabled: bool, command: list[str]) -> None:
    if sys.platform != "win32":
        raise OSError("the Run registry key exists on Windows only")
    import winreg

    try:
        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, _RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
            if enabled:
                line = subprocess.list2cmdline(command)
                winreg.SetValueEx(key, APP_NAME, 0, winreg.REG_SZ, line)
            else:
                with contextlib.suppress(FileNotFoundError):
                    winreg.DeleteValue(key, APP_NAME)
    except OSError as exc:
        raise disk_error(exc, f"HKCU\\{_RUN_KEY}\\{APP_NAME}") from exc


def _read_run_key() -> str | None:
    if sys.platform != "win32":
        return None
    import winreg

    try:
        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, _RUN_KEY) as key:
            value, _kind = winreg.QueryValueEx(key, APP_NAME)
    except OSError:
        return None
    return str(value)
