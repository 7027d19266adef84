"""User settings: one frozen `Settings`, keyed by `Key`, stored as JSON in the data folder.

`SettingsStore.load()` never fails on a bad file: it keeps the file aside as a `.bak`,
falls back to the defaults and returns a one-line warning for the UI. `save()` writes
atomically, so a crash leaves either the old file or the new one, never half of either.
Fields that name a choice hold members of the `voxtray.choices` enums.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from voxtray.choices import (
    Choice,
    Engine,
    HotkeyBackend,
    HotkeyMode,
    OutputMethod,
    Precision,
    Provider,
    RemoteProtocol,
)
from voxtray.errors import ExitCode, VoxtrayError, disk_error, first_line
from voxtray.fileio import atomic_write, remove_stale_temps
from voxtray.paths import data_home
from voxtray.text import languages
from voxtray.text.languages import is_language_setting

logger = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"

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
    SPOKEN_PUNCTUATION = "spoken_punctuation"
    SPOKEN_COMMANDS = "spoken_commands"
    REPLACEMENTS_ENABLED = "replacements_enabled"
    REPLACEMENTS = "replacements"
    VOCABULARY = "vocabulary"
    SOUND_CUES = "sound_cues"
    REMOTE_URL = "remote_url"
    REMOTE_PROTOCOL = "remote_protocol"
    REMOTE_MODEL = "remote_model"
    REMOTE_TIMEOUT_S = "remote_timeout_s"
    HISTORY_AUDIO_MB = "history_audio_mb"
    HISTORY_AUDIO_DAYS = "history_audio_days"
    LIVE_TEXT = "live_text"
    TYPE_AS_YOU_GO = "type_as_you_go"


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
    choices: type[Choice] | None = None
    low: float | None = None
    high: Callable[[], float] | None = None
    empty_ok: bool = False  # a str that may be empty (a list the user has not filled)
    member: Callable[[str], bool] | None = None  # a str from an open-ended set
    allowed: str = ""  # what `member` accepts, in words

    def describe(self) -> str:
        if self.member is not None:
            return self.allowed
        if self.choices is not None:
            return "one of " + ", ".join(self.choices.values())
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "a string" if self.empty_ok else "a non-empty string"
        noun = "a number" if self.kind is float else "an integer"
        if self.high is None:
            return f"{noun} >= {_fmt(self.low)}"
        return f"{noun} from {_fmt(self.low)} to {_fmt(self.high())}"

    def accepts(self, value: object) -> bool:
        if not _has_kind(value, self.kind):
            return False
        if isinstance(value, str):
            if self.choices is not None:
                return value in self.choices.values()
            if self.member is not None:
                return self.member(value)
            return self.empty_ok or bool(value.strip())
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


_REMOTE_SCHEMES = ("http://", "https://", "tcp://")


def _remote_url_ok(value: object) -> bool:
    if not isinstance(value, str):
        return False
    if not value:
        return True
    host = value.partition("://")[2].split("/", 1)[0]
    return value.startswith(_REMOTE_SCHEMES) and bool(host) and value.strip() == value


_REMOTE_URL_ALLOWED = "empty or a server URL: http(s)://HOST[:PORT] or tcp://HOST:PORT"
_MICROPHONE_ALLOWED = "null (system default), a device index >= 0 or a device name"

_RULES: dict[Key, _Rule] = {
    Key.MODEL: _Rule(str),
    Key.ENGINE: _Rule(str, choices=Engine),
    Key.PROVIDER: _Rule(str, choices=Provider),
    Key.GPU_INDEX: _Rule(int, low=0),
    Key.PRECISION: _Rule(str, choices=Precision),
    Key.HOTKEY: _Rule(str),
    Key.HOTKEY_MODE: _Rule(str, choices=HotkeyMode),
    Key.HOTKEY_BACKEND: _Rule(str, choices=HotkeyBackend),
    Key.OUTPUT: _Rule(str, choices=OutputMethod),
    Key.VAD_THRESHOLD: _Rule(float, low=0.05, high=lambda: 0.95),
    Key.MIN_SILENCE_MS: _Rule(int, low=100, high=lambda: 3000),
    Key.PREROLL_MS: _Rule(int, low=300, high=lambda: 2000),
    Key.TAIL_MS: _Rule(int, low=300, high=lambda: 3000),
    Key.HUD_ENABLED: _Rule(bool),
    Key.START_AT_LOGIN: _Rule(bool),
    Key.LANGUAGE: _Rule(str, member=is_language_setting, allowed=languages.ALLOWED),
    Key.THREADS: _Rule(int, low=1, high=max_threads),
    Key.SPOKEN_PUNCTUATION: _Rule(bool),
    Key.SPOKEN_COMMANDS: _Rule(bool),
    Key.REPLACEMENTS_ENABLED: _Rule(bool),
    # One "spoken -> written" a line (voxtray.text.postprocess.parse_replacements).
    Key.REPLACEMENTS: _Rule(str, empty_ok=True),
    # Words and names, one a line or comma separated (voxtray.text.vocabulary).
    Key.VOCABULARY: _Rule(str, empty_ok=True),
    Key.SOUND_CUES: _Rule(bool),
    Key.REMOTE_PROTOCOL: _Rule(str, choices=RemoteProtocol),
    Key.REMOTE_MODEL: _Rule(str, empty_ok=True),
    Key.REMOTE_TIMEOUT_S: _Rule(float, low=1, high=lambda: 600),
    # Each dictation's audio kept for re-running; 0 keeps none (voxtray.history.audio).
    Key.HISTORY_AUDIO_MB: _Rule(int, low=0, high=lambda: 100_000),
    Key.HISTORY_AUDIO_DAYS: _Rule(int, low=0, high=lambda: 3650),
    # Text so far shown while speaking (local engines; voxtray.inference.live).
    Key.LIVE_TEXT: _Rule(bool),
    # With live text in toggle mode: committed words typed while speaking
    # (voxtray.dictation.live_typing).
    Key.TYPE_AS_YOU_GO: _Rule(bool),
}


def _check(key: Key, value: object) -> None:
    if key is Key.MICROPHONE:
        ok, allowed = _microphone_ok(value), _MICROPHONE_ALLOWED
    elif key is Key.REMOTE_URL:
        ok, allowed = _remote_url_ok(value), _REMOTE_URL_ALLOWED
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
    engine: Engine = Engine.AUTO
    provider: Provider = Provider.AUTO
    gpu_index: int = 0
    precision: Precision = Precision.AUTO
    microphone: MicrophoneId = None
    hotkey: str = "ctrl+alt+space"
    hotkey_mode: HotkeyMode = HotkeyMode.HOLD_OR_TAP
    hotkey_backend: HotkeyBackend = HotkeyBackend.AUTO
    output: OutputMethod = OutputMethod.AUTO
    vad_threshold: float = 0.5
    min_silence_ms: int = 400
    preroll_ms: int = 400
    tail_ms: int = 400
    hud_enabled: bool = True
    start_at_login: bool = False
    language: str = "en"
    threads: int = field(default_factory=_default_threads)
    spoken_punctuation: bool = True
    spoken_commands: bool = True
    replacements_enabled: bool = True
    replacements: str = ""
    vocabulary: str = ""
    sound_cues: bool = True
    remote_url: str = ""  # the transcription server when engine is remote
    remote_protocol: RemoteProtocol = RemoteProtocol.OPENAI
    remote_model: str = ""  # empty: the server's default ("whisper-1" over the OpenAI API)
    remote_timeout_s: float = 10.0
    history_audio_mb: int = 200
    history_audio_days: int = 30
    live_text: bool = True
    type_as_you_go: bool = False

    def __post_init__(self) -> None:
        self.validate()
        # Validated strings become enum members, so `settings.engine is Engine.ORT` holds
        # whether the value came from a file, a flag or the code.
        for key, rule in _RULES.items():
            value = getattr(self, key.value)
            if rule.choices is not None and not isinstance(value, rule.choices):
                object.__setattr__(self, key.value, rule.choices(value))

    def validate(self) -> None:
        """Check every field.

        Raises:
            SettingsError: naming the first bad key and what it allows.
        """
        for key in Key:
            _check(key, getattr(self, key.value))

    def remote_problem(self) -> str | None:
        """Why engine remote cannot run with these settings, or None when it can.

        Each value is valid on its own; a file naming engine remote without a server is
        not thrown away for it, the local model runs instead.
        """
        if self.engine != Engine.REMOTE:
            return None
        if not self.remote_url:
            return "engine remote needs a server URL"
        wyoming = self.remote_url.startswith("tcp://")
        if wyoming != (self.remote_protocol == RemoteProtocol.WYOMING):
            return "a tcp:// server URL goes with protocol wyoming, http(s):// with openai"
        return None

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
        return {key.value: _plain(getattr(self, key.value)) for key in Key}

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


def _plain(value: object) -> object:
    return value.value if isinstance(value, Choice) else value


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
        remove_stale_temps(self.path)
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
            atomic_write(self.path, (text + "\n").encode("utf-8"), 0o600)
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
        raise SettingsError(f"not valid JSON: {first_line(exc)}") from exc


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
