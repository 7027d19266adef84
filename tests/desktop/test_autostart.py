"""Start at login: the XDG desktop entry, the macOS LaunchAgent and the Windows Run key."""

from __future__ import annotations

import os
import plistlib
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest

from voxtray.desktop import autostart
from voxtray.errors import DiskError


@pytest.fixture
def xdg_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "xdg-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    monkeypatch.setattr(sys, "platform", "linux")
    return folder


def _desktop_values(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:])


def test_autostart_desktop_file_written_and_removed(xdg_config: Path) -> None:
    expected = xdg_config / "autostart" / "voxtray.desktop"
    assert not autostart.start_at_login_enabled()
    written = autostart.set_start_at_login(True, ["/usr/bin/voxtray", "--tray"])
    assert written == expected
    assert autostart.start_at_login_enabled()
    values = _desktop_values(expected)
    assert values["Type"] == "Application"
    assert values["Name"] == "Voxtray"
    assert values["Exec"] == "/usr/bin/voxtray --tray"
    assert values["Terminal"] == "false"
    assert stat.S_IMODE(expected.stat().st_mode) == 0o644

    removed = autostart.set_start_at_login(False, [])
    assert removed == expected
    assert not expected.exists()
    assert not autostart.start_at_login_enabled()
    autostart.set_start_at_login(False, [])  # removing twice is fine


def test_autostart_exec_quotes_and_escapes(xdg_config: Path) -> None:
    command = ["/opt/My Apps/python", "-m", "voxtray", "--label=100%", 'say "hi" $HOME', "a\\b"]
    path = autostart.set_start_at_login(True, command)
    assert path is not None
    exec_value = _desktop_values(path)["Exec"]
    assert exec_value == (
        '"/opt/My Apps/python" -m voxtray --label=100%% "say \\\\"hi\\\\" \\\\$HOME" "a\\\\\\\\b"'
    )


def test_autostart_rewrite_replaces_the_command(xdg_config: Path) -> None:
    autostart.set_start_at_login(True, ["/old/voxtray"])
    path = autostart.set_start_at_login(True, ["/new/voxtray"])
    assert path is not None
    assert _desktop_values(path)["Exec"] == "/new/voxtray"


def test_autostart_relative_xdg_config_home_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/config")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert autostart.xdg_autostart_path() == tmp_path / ".config" / "autostart" / "voxtray.desktop"


def test_autostart_empty_command_is_refused(xdg_config: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        autostart.set_start_at_login(True, [])


def test_autostart_unwritable_is_a_disk_error(xdg_config: Path) -> None:
    xdg_config.write_text("a file where the folder should be")
    with pytest.raises(DiskError):
        autostart.set_start_at_login(True, ["/usr/bin/voxtray"])


def test_macos_launch_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "darwin")
    command = ["/Applications/Voxtray.app/Contents/MacOS/voxtray", "--tray"]
    path = autostart.set_start_at_login(True, command)
    assert path == tmp_path / "Library" / "LaunchAgents" / "io.github.voxtray.plist"
    agent = plistlib.loads(path.read_bytes())
    assert agent["ProgramArguments"] == command
    assert agent["RunAtLoad"] is True
    assert agent["Label"] == "io.github.voxtray"
    assert autostart.start_at_login_enabled()
    assert autostart.set_start_at_login(False, []) == path
    assert not path.exists()
    assert not autostart.start_at_login_enabled()


class FakeWinreg(types.ModuleType):
    """Just enough of winreg: one HKCU key holding named string values."""

    HKEY_CURRENT_USER = 1
    KEY_SET_VALUE = 2
    REG_SZ = 1

    def __init__(self) -> None:
        super().__init__("winreg")
        self.values: dict[str, str] = {}
        self.opened: list[str] = []

    def OpenKey(self, root: int, sub_key: str, reserved: int = 0, access: int = 0) -> FakeWinreg:
        assert root == self.HKEY_CURRENT_USER
        self.opened.append(sub_key)
        return self

    def __enter__(self) -> FakeWinreg:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def SetValueEx(self, key: object, name: str, reserved: int, kind: int, value: str) -> None:
        self.values[name] = value

    def DeleteValue(self, key: object, name: str) -> None:
        if name not in self.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        del self.values[name]

    def QueryValueEx(self, key: object, name: str) -> tuple[str, int]:
        if name not in self.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return self.values[name], self.REG_SZ


def test_windows_run_key(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeWinreg()
    monkeypatch.setitem(sys.modules, "winreg", fake)
    monkeypatch.setattr(sys, "platform", "win32")
    command = [r"C:\Program Files\Voxtray\voxtray.exe", "--tray"]
    assert autostart.set_start_at_login(True, command) is None
    assert fake.opened == [r"Software\Microsoft\Windows\CurrentVersion\Run"]
    assert fake.values == {"Voxtray": r'"C:\Program Files\Voxtray\voxtray.exe" --tray'}
    assert autostart.start_at_login_enabled()
    assert autostart.set_start_at_login(False, []) is None
    assert fake.values == {}
    assert not autostart.start_at_login_enabled()
    autostart.set_start_at_login(False, [])  # removing twice is fine


def test_the_login_command_of_a_bundle_is_its_executable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bundle refuses `-m voxtray` ("invalid choice"): its entry runs the executable alone."""
    assert autostart.launch_command() == [sys.executable, "-m", "voxtray"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/usr/lib/voxtray/voxtray")
    assert autostart.launch_command() == ["/usr/lib/voxtray/voxtray"]


def test_the_login_command_runs_voxtray() -> None:
    done = subprocess.run(
        [*autostart.launch_command(), "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("voxtray ")


def test_an_entry_running_another_command_is_written_again_at_start(
    xdg_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/usr/lib/voxtray/voxtray")
    old = autostart.set_start_at_login(True, ["/usr/lib/voxtray/voxtray", "-m", "voxtray"])
    assert old is not None
    assert autostart.keep_start_at_login(True) == old
    assert _desktop_values(old)["Exec"] == "/usr/lib/voxtray/voxtray"
    written = old.stat()
    assert autostart.keep_start_at_login(True) is None  # already right: left untouched
    assert (old.stat().st_ino, old.stat().st_mtime_ns) == (written.st_ino, written.st_mtime_ns)


def test_an_entry_is_made_at_start_only_while_the_setting_is_on(xdg_config: Path) -> None:
    assert autostart.keep_start_at_login(False) is None
    assert not autostart.start_at_login_enabled()
    made = autostart.keep_start_at_login(True)
    assert made == autostart.xdg_autostart_path()
    assert _desktop_values(made)["Exec"] == " ".join(autostart.launch_command())


def test_a_fifo_in_place_of_the_entry_does_not_block_start(xdg_config: Path) -> None:
    path = autostart.xdg_autostart_path()
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    assert autostart.keep_start_at_login(True) == path
    assert path.is_file()
