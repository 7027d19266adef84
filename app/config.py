"""User settings: one frozen `Settings`, keyed by `Key`, stored as JSON in the data folder.

`SettingsStore.load()` never fails on a bad file: it keeps the file aside as a `.bak`,
falls back to the defaults and returns a one-line warning for the UI. `save()` writes
atomically, so a crash leaves either the old file or the new one, never half of either.
The `set_start_at_login` helper registers the app with the desktop's login items.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import logging
import math
import os
import plistlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.errors import ExitCode, VoxtrayError, disk_error
from app.paths import data_home

logger = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
_TEMP_PREFIX = ".settings-"
_TEMP_SUFFIX = ".tmp"
# A temp file this old cannot belong to a save still in progress: it is what a crash left.
_STALE_TEMP_S = 60.0

MicrophoneId = int | str | None
"""A sounddevice input: None for the system default, a device index or a device name."""


class SettingsError(VoxtrayError):
    """A setting with a value outside what the key allows."""

    exit_code = ExitCode.BAD_INPUT


class Key(enum.StrEnum):
    """Every setting, by the name it has in settings.json and on `Settings`."""

    MODEL = "model"
    ENGINE = "engine"
    PROVIDER = "provider"
    GPU_INDEX = "gpu_index"
    PRECISION = "precision"
    MICROPHONE = "microphone"
    HOTKEY = "hotkey"
    HOTKEY_MODE = "hotkey_mode"
    HOTKEY_BACKEND = "hotkey_backend"
    OUTPUT = "output"
    VAD_THRESHOLD = "vad_threshold"
    MIN_SILENCE_MS = "min_silence_ms"
    PREROLL_MS = "preroll_ms"
    TAIL_MS = "tail_ms"
    HUD_ENABLED = "hud_enabled"
    START_AT_LOGIN = "start_at_login"
    LANGUAGE = "language"
    THREADS = "threads"


ENGINES = ("auto", "ort", "sherpa")
PROVIDERS = ("auto", "cpu", "cuda", "tensorrt")
PRECISIONS = ("auto", "int8", "fp32")
HOTKEY_MODES = ("hold", "toggle", "hold_or_tap")
OUTPUTS = ("auto", "xdotool", "pynput", "keyboard", "wtype", "ydotool", "clipboard")


def max_threads() -> int:
    """The most inference threads a setting may ask for on this machine."""
    return os.cpu_count() or 1


def _default_threads() -> int:
    # Two threads is the default, but a single-core machine must still get valid defaults.
    return min(2, max_threads())


@dataclass(frozen=True)
class _Rule:
    """What one key accepts: a type, and optionally a set of choices or a range."""

    kind: type
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: Callable[[], float] | None = None

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "a non-empty string"
        noun = "a number" if self.kind is float else "an integer"
        if self.high is None:
            return f"{noun} >= {_fmt(self.low)}"
        return f"{noun} from {_fmt(self.low)} to {_fmt(self.high())}"

    def accepts(self, value: object) -> bool:
        if not _has_kind(value, self.kind):
            return False
        if isinstance(value, str):
            return value in self.choices if self.choices else bool(value.strip())
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _in_range(value, self.low, self.high)
        return True


def _fmt(number: float | None) -> str:
    return f"{number:g}"


def _has_kind(value: object, kind: type) -> bool:
    # bool is an int subclass, but `true` is no thread count and `1` is no switch.
    if kind is bool or isinstance(value, bool):
        return kind is bool and isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _in_range(value: float, low: float | None, high: Callable[[], float] | None) -> bool:
    # Only floats can be NaN; math.isfinite would overflow on a huge JSON integer.
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if low is not None and value < low:
        return False
    return high is None or value <= high()


def _microphone_ok(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and bool(value.strip())


_MICROPHONE_ALLOWED = "null (system default), a device index >= 0 or a device name"

_RULES: dict[Key, _Rule] = {
    Key.MODEL: _Rule(str),
    Key.ENGINE: _Rule(str, choices=ENGINES),
    Key.PROVIDER: _Rule(str, choices=PROVIDERS),
    Key.GPU_INDEX: _Rule(int, low=0),
    Key.PRECISION: _Rule(str, choices=PRECISIONS),
    Key.HOTKEY: _Rule(str),
    Key.HOTKEY_MODE: _Rule(str, choices=HOTKEY_MODES),
    Key.HOTKEY_BACKEND: _Rule(str),
    Key.OUTPUT: _Rule(str, choices=OUTPUTS),
    Key.VAD_THRESHOLD: _Rule(float, low=0.05, high=lambda: 0.95),
    Key.MIN_SILENCE_MS: _Rule(int, low=100, high=lambda: 3000),
    Key.PREROLL_MS: _Rule(int, low=300, high=lambda: 2000),
    Key.TAIL_MS: _Rule(int, low=300, high=lambda: 3000),
    Key.HUD_ENABLED: _Rule(bool),
    Key.START_AT_LOGIN: _Rule(bool),
    Key.LANGUAGE: _Rule(str),
    Key.THREADS: _Rule(int, low=1, high=max_threads),
}


def _check(key: Key, value: object) -> None:
    if key is Key.MICROPHONE:
        ok, allowed = _microphone_ok(value), _MICROPHONE_ALLOWED
    else:
        rule = _RULES[key]
        ok, allowed = rule.accepts(value), rule.describe()
    if not ok:
        raise SettingsError(f"setting {key.value} must be {allowed} (got {_show(value)})")


def _show(value: object) -> str:
    # Keeps the message on one line and short, whatever a hand-edited file holds.
    if value is None or isinstance(value, str | int | float):
        try:
            text = json.dumps(value)
        except ValueError:  # an integer past Python's int-to-str digit limit
            return "a huge integer"
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


@dataclass(frozen=True)
class Settings:
    """All user settings; an instance is always valid (it is checked when built).

    Field names are the `Key` values, so `settings.get(Key.X)` and `settings.x` agree.
    """

    model: str = "whisper-tiny.en"
    engine: str = "auto"
    provider: str = "auto"
    gpu_index: int = 0
    precision: str = "auto"
    microphone: MicrophoneId = None
    hotkey: str = "ctrl+alt+space"
    hotkey_mode: str = "hold_or_tap"
    hotkey_backend: str = "auto"
    output: str = "auto"
    vad_threshold: float = 0.5
    min_silence_ms: int = 400
    preroll_ms: int = 400
    tail_ms: int = 400
    hud_enabled: bool = True
    start_at_login: bool = False
    language: str = "en"
    threads: int = field(default_factory=_default_threads)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check every field.

        Raises:
            SettingsError: naming the first bad key and what it allows.
        """
        for key in Key:
            _check(key, getattr(self, key.value))

    def get(self, key: Key) -> Any:
        """The value of one setting."""
        return getattr(self, Key(key).value)

    def replace(self, **changes: Any) -> Settings:
        """A copy with some settings changed, e.g. `replace(engine="ort")`.

        Raises:
            SettingsError: for an unknown name or an invalid value.
        """
        for name in changes:
            _require_key(name)
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The settings as a JSON-ready object, one member per key."""
        return {key.value: getattr(self, key.value) for key in Key}

    @classmethod
    def from_json(cls, data: object) -> Settings:
        """Settings from a parsed JSON object; missing keys take their defaults.

        Unknown keys are ignored and logged; `parse_settings` also returns those warnings.

        Raises:
            SettingsError: if `data` is not an object or a value is invalid.
        """
        settings, warnings = parse_settings(data)
        for warning in warnings:
            logger.warning("%s", warning)
        return settings


def _require_key(name: str) -> Key:
    try:
        return Key(name)
    except ValueError:
        raise SettingsError(f"unknown setting {_show(name)}") from None


def parse_settings(data: object) -> tuple[Settings, list[str]]:
    """Like `Settings.from_json`, but returns the warnings instead of logging them.

    Raises:
        SettingsError: if `data` is not an object or a value is invalid.
    """
    if not isinstance(data, Mapping):
        raise SettingsError(f"settings must be a JSON object (got {type(data).__name__})")
    known = {key.value for key in Key}
    unknown = sorted(str(name) for name in data if name not in known)
    warnings = [f"ignored unknown setting {_show(name)}" for name in unknown]
    values = {name: value for name, value in data.items() if name in known}
    threads = values.get(Key.THREADS.value)
    if isinstance(threads, int) and not isinstance(threads, bool) and threads > max_threads():
        # A file from a bigger machine (a synced or portable VOXTRAY_HOME) is not a user
        # mistake; clamping keeps every other setting instead of resetting them all.
        values[Key.THREADS.value] = max_threads()
        warnings.append(f"setting threads lowered from {threads} to {max_threads()} CPUs")
    return Settings(**values), warnings


class SettingsStore:
    """Reads and writes settings.json.

    Args:
        path: the settings file; by default `settings.json` in the data folder.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else data_home() / SETTINGS_FILE

    def load(self) -> tuple[Settings, list[str]]:
        """The saved settings and one-line warnings for the UI; never raises.

        A missing file gives the defaults and no warning. A file that cannot be used (not
        JSON, not an object, an invalid value) is moved aside to a `.bak` file and the
        defaults are returned with a warning naming that file.
        """
        _remove_stale_temps(self.path.parent)
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return Settings(), []
        except OSError as exc:
            return Settings(), [f"cannot read {self.path} ({_reason(exc)}); using defaults"]
        try:
            return parse_settings(_decode(raw))
        except SettingsError as exc:
            return Settings(), [self._set_aside(str(exc))]

    def save(self, settings: Settings) -> None:
        """Validate and write the settings atomically, readable by the user only.

        Raises:
            SettingsError: if the settings are invalid.
            DiskError: if the file cannot be written; the previous file is then intact.
        """
        settings.validate()
        text = json.dumps(settings.to_json(), indent=2, ensure_ascii=False, allow_nan=False)
        try:
            _atomic_write(self.path, (text + "\n").encode("utf-8"), mode=0o600)
        except OSError as exc:
            raise disk_error(exc, str(self.path)) from exc

    def _set_aside(self, problem: str) -> str:
        backup = _free_backup_name(self.path)
        try:
            os.replace(self.path, backup)
        except OSError as exc:
            return f"settings file {self.path} is unusable ({problem}); using defaults; " + (
                f"it could not be moved aside: {_reason(exc)}"
            )
        return f"settings file was unusable ({problem}); using defaults; kept it as {backup}"


def _decode(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        # ValueError covers bad JSON, bad UTF-8 and over-long integers.
        raise SettingsError(f"not valid JSON: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _free_backup_name(path: Path) -> Path:
    """`settings.json.bak`, or a timestamped name so an older backup is never overwritten."""
    plain = path.with_name(path.name + ".bak")
    if not plain.exists():
        return plain
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.{stamp}.bak")
    counter = 1
    while candidate.exists():
        counter += 1
        candidate = path.with_name(f"{path.name}.{stamp}-{counter}.bak")
    return candidate


def _atomic_write(target: Path, data: bytes, *, mode: int) -> None:
    """Write `target` so that it holds either its old bytes or `data`, whatever happens."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=_TEMP_SUFFIX, dir=target.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    # Makes the rename itself survive a power cut; Windows cannot open folders, hence best effort.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove_stale_temps(folder: Path) -> None:
    """Delete temp files left by a save that crashed before its rename."""
    now = time.time()
    with contextlib.suppress(OSError):
        for temp in folder.glob(f"{_TEMP_PREFIX}*{_TEMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                if now - temp.stat().st_mtime > _STALE_TEMP_S:
                    temp.unlink()


# --- Start at login -------------------------------------------------------------------

APP_NAME = "Voxtray"
_LAUNCH_AGENT_LABEL = "io.github.voxtray"
_RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"


def set_start_at_login(enabled: bool, command: list[str]) -> Path | None:
    """Register (or unregister) `command` to run when the user logs in.

    Linux and other XDG desktops get `$XDG_CONFIG_HOME/autostart/voxtray.desktop`; macOS a
    LaunchAgent plist in `~/Library/LaunchAgents`; Windows a value under the HKCU Run key.

    Args:
        enabled: True to register, False to remove the registration (missing is fine).
        command: the program and its arguments, e.g. `[sys.executable, "-m", "app"]`.

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


def start_at_login_enabled() -> bool:
    """Whether a login entry for Voxtray exists (it may point at an older command)."""
    if sys.platform == "win32":
        return _read_run_key() is not None
    if sys.platform == "darwin":
        return launch_agent_path().is_file()
    return xdg_autostart_path().is_file()


def xdg_autostart_path() -> Path:
    """`$XDG_CONFIG_HOME/autostart/voxtray.desktop` (`~/.config` when unset)."""
    config = os.environ.get("XDG_CONFIG_HOME", "")
    # The XDG spec says to ignore a relative value.
    base = Path(config) if os.path.isabs(config) else Path.home() / ".config"
    return base / "autostart" / "voxtray.desktop"


def launch_agent_path() -> Path:
    """`~/Library/LaunchAgents/<label>.plist`, the per-user macOS login item."""
    return Path.home() / "Library" / "LaunchAgents" / f"{_LAUNCH_AGENT_LABEL}.plist"


def _set_file(path: Path, enabled: bool, render: Callable[[], bytes]) -> Path:
    try:
        if enabled:
            _atomic_write(path, render(), mode=0o644)
        else:
            path.unlink(missing_ok=True)
    except OSError as exc:
        raise disk_error(exc, str(path)) from exc
    return path


# Characters that force quoting in a desktop entry Exec value (Desktop Entry Spec, "Exec key").
_EXEC_RESERVED = frozenset(" \t\n\"'\\><~|&;$*?#()`")


def _desktop_entry(command: list[str]) -> bytes:
    exec_line = " ".join(_exec_arg(arg) for arg in command)
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        f"Name={APP_NAME}",
        "Comment=Push-to-talk dictation",
        f"Exec={exec_line}",
        "Icon=voxtray",
        "Terminal=false",
        "X-GNOME-Autostart-enabled=true",
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
