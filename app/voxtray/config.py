"""User settings: one frozen `Settings`, keyed by `Key`, stored as JSON in the data folder.

`SettingsStore.load()` never fails on a bad file: it keeps the file aside as a `.bak`,
falls back to the defaults and returns a one-line warning for the UI. `save()` writes
atomically, so a crash leaves either the old file or the new one, never half of either.
Fields that name a choice hold members of the `voxtray.choices` enums; what each key
accepts, and its default, is its entry in `voxtray.settings_schema`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from voxtray import settings_schema as S
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
from voxtray.settings_schema import SCHEMA, Key, MicrophoneId, Spec, default_threads, max_threads

__all__ = ["Key", "MicrophoneId", "Settings", "SettingsError", "SettingsStore", "max_threads"]

logger = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"


class SettingsError(VoxtrayError):
    """A setting with a value outside what the key allows."""

    exit_code = ExitCode.BAD_INPUT


def _describe(spec: Spec[object]) -> str:
    if spec.check is not None:
        return spec.allowed
    if spec.choices is not None:
        return "one of " + ", ".join(spec.choices.values())
    if spec.kind is bool:
        return "true or false"
    if spec.kind is str:
        return "a string" if spec.empty_ok else "a non-empty string"
    noun = "a number" if spec.kind is float else "an integer"
    top = spec.top()
    if top is None:
        return f"{noun} >= {_fmt(spec.low)}"
    return f"{noun} from {_fmt(spec.low)} to {_fmt(top)}"


def _accepts(spec: Spec[object], value: object) -> bool:
    if spec.check is not None:
        return spec.check(value)
    if not _has_kind(value, spec.kind):
        return False
    if isinstance(value, str):
        if spec.choices is not None:
            return value in spec.choices.values()
        return spec.empty_ok or bool(value.strip())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _in_range(value, spec.low, spec.top())
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


def _in_range(value: float, low: float | None, high: float | None) -> bool:
    # Only floats can be NaN; math.isfinite would overflow on a huge JSON integer.
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if low is not None and value < low:
        return False
    return high is None or value <= high


def _check(key: Key, value: object) -> None:
    spec = SCHEMA[key]
    if not _accepts(spec, value):
        raise SettingsError(f"setting {key.value} must be {_describe(spec)} (got {_show(value)})")


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

    model: str = S.MODEL.default
    engine: Engine = S.ENGINE.default
    provider: Provider = S.PROVIDER.default
    gpu_index: int = S.GPU_INDEX.default
    precision: Precision = S.PRECISION.default
    microphone: MicrophoneId = S.MICROPHONE.default
    hotkey: str = S.HOTKEY.default
    hotkey_mode: HotkeyMode = S.HOTKEY_MODE.default
    hotkey_backend: HotkeyBackend = S.HOTKEY_BACKEND.default
    output: OutputMethod = S.OUTPUT.default
    vad_threshold: float = S.VAD_THRESHOLD.default
    min_silence_ms: int = S.MIN_SILENCE_MS.default
    preroll_ms: int = S.PREROLL_MS.default
    tail_ms: int = S.TAIL_MS.default
    hud_enabled: bool = S.HUD_ENABLED.default
    start_at_login: bool = S.START_AT_LOGIN.default
    language: str = S.LANGUAGE.default
    threads: int = field(default_factory=default_threads)
    spoken_punctuation: bool = S.SPOKEN_PUNCTUATION.default
    spoken_commands: bool = S.SPOKEN_COMMANDS.default
    replacements_enabled: bool = S.REPLACEMENTS_ENABLED.default
    replacements: str = S.REPLACEMENTS.default
    vocabulary: str = S.VOCABULARY.default
    sound_cues: bool = S.SOUND_CUES.default
    remote_url: str = S.REMOTE_URL.default
    remote_protocol: RemoteProtocol = S.REMOTE_PROTOCOL.default
    remote_model: str = S.REMOTE_MODEL.default
    remote_timeout_s: float = S.REMOTE_TIMEOUT_S.default
    history_audio_mb: int = S.HISTORY_AUDIO_MB.default
    history_audio_days: int = S.HISTORY_AUDIO_DAYS.default
    live_text: bool = S.LIVE_TEXT.default
    type_as_you_go: bool = S.TYPE_AS_YOU_GO.default
    first_run_done: bool = S.FIRST_RUN_DONE.default
    recommend_budget_ms: int = S.RECOMMEND_BUDGET_MS.default

    def __post_init__(self) -> None:
        self.validate()
        # Validated strings become enum members, so `settings.engine is Engine.ORT` holds
        # whether the value came from a file, a flag or the code.
        for key, spec in SCHEMA.items():
            value = getattr(self, key.value)
            if spec.choices is not None and not isinstance(value, spec.choices):
                object.__setattr__(self, key.value, spec.choices(value))

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
