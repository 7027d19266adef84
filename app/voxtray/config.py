"""User settings: one frozen `Settings`, keyed by `Key`, stored as JSON in the data folder.

`SettingsStore.load()` never fails on a bad file: a value its setting refuses falls back
to the default, a file that is unusable as a whole falls back entirely, each with a
one-line warning for the UI, and what the user wrote is kept as a `.bak`. `save()` writes
atomically, so a crash leaves either the old file or the new one, never half of either.
Fields that name a choice hold members of the `voxtray.choices` enums; what each key
accepts, and its default, is its entry in `voxtray.settings_schema`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import glob
import json
import logging
import os
from collections.abc import Mapping
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
from voxtray.fileio import UnusableFileError, atomic_write, read_regular, remove_stale_temps
from voxtray.paths import data_home
from voxtray.settings_checks import shown
from voxtray.settings_schema import SCHEMA, Key, MicrophoneId, max_threads

__all__ = [
    "Key",
    "MicrophoneId",
    "Settings",
    "SettingsError",
    "SettingsStore",
    "max_threads",
    "refusal",
]

logger = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
MAX_FILE_BYTES = 8 * 2**20
"""Far above what any setting holds (5,000 vocabulary entries of 100 characters)."""


class SettingsError(VoxtrayError):
    """A setting with a value outside what the key allows."""

    exit_code = ExitCode.BAD_INPUT


def setting(key: Key) -> Any:
    """A `Settings` field for `key`: its default, and its `Spec` in the field's metadata."""
    spec = key.spec
    metadata = {"spec": spec}
    if spec.default_factory is not None:
        return field(default_factory=spec.default_factory, metadata=metadata)
    return field(default=spec.default, metadata=metadata)


def refusal(key: Key, value: object) -> str | None:
    """Why setting `key` cannot be `value`, as the file, the command line and the settings
    window all say it: "setting hotkey must be ... (...)"; None when it can."""
    problem = key.spec.problem(value)
    return None if problem is None else f"setting {key.value} {problem}"


def _check(key: Key, value: object) -> None:
    if (refused := refusal(key, value)) is not None:
        raise SettingsError(refused)


@dataclass(frozen=True)
class Settings:
    """All user settings; an instance is always valid (it is checked when built).

    One field per `Key`, named by its value, so `settings.get(Key.X)` and `settings.x`
    agree; each field's default is its `Spec`'s, and the field carries that `Spec`
    (`dataclasses.fields(Settings)[i].metadata["spec"]`). Only the type is written here.
    """

    model: str = setting(Key.MODEL)
    engine: Engine = setting(Key.ENGINE)
    provider: Provider = setting(Key.PROVIDER)
    gpu_index: int = setting(Key.GPU_INDEX)
    precision: Precision = setting(Key.PRECISION)
    microphone: MicrophoneId = setting(Key.MICROPHONE)
    hotkey: str = setting(Key.HOTKEY)
    hotkey_mode: HotkeyMode = setting(Key.HOTKEY_MODE)
    hotkey_backend: HotkeyBackend = setting(Key.HOTKEY_BACKEND)
    output: OutputMethod = setting(Key.OUTPUT)
    vad_threshold: float = setting(Key.VAD_THRESHOLD)
    min_silence_ms: int = setting(Key.MIN_SILENCE_MS)
    preroll_ms: int = setting(Key.PREROLL_MS)
    tail_ms: int = setting(Key.TAIL_MS)
    hud_enabled: bool = setting(Key.HUD_ENABLED)
    start_at_login: bool = setting(Key.START_AT_LOGIN)
    language: str = setting(Key.LANGUAGE)
    threads: int = setting(Key.THREADS)
    spoken_punctuation: bool = setting(Key.SPOKEN_PUNCTUATION)
    spoken_commands: bool = setting(Key.SPOKEN_COMMANDS)
    replacements_enabled: bool = setting(Key.REPLACEMENTS_ENABLED)
    replacements: str = setting(Key.REPLACEMENTS)
    vocabulary: str = setting(Key.VOCABULARY)
    sound_cues: bool = setting(Key.SOUND_CUES)
    remote_url: str = setting(Key.REMOTE_URL)
    remote_protocol: RemoteProtocol = setting(Key.REMOTE_PROTOCOL)
    remote_model: str = setting(Key.REMOTE_MODEL)
    remote_timeout_s: float = setting(Key.REMOTE_TIMEOUT_S)
    cleanup_enabled: bool = setting(Key.CLEANUP_ENABLED)
    cleanup_endpoint: str = setting(Key.CLEANUP_ENDPOINT)
    cleanup_model: str = setting(Key.CLEANUP_MODEL)
    cleanup_prompt: str = setting(Key.CLEANUP_PROMPT)
    cleanup_budget_ms: int = setting(Key.CLEANUP_BUDGET_MS)
    cleanup_timeout_s: float = setting(Key.CLEANUP_TIMEOUT_S)
    cleanup_consented_hosts: str = setting(Key.CLEANUP_CONSENTED_HOSTS)
    modes: str = setting(Key.MODES)
    history_audio_mb: int = setting(Key.HISTORY_AUDIO_MB)
    history_audio_days: int = setting(Key.HISTORY_AUDIO_DAYS)
    live_text: bool = setting(Key.LIVE_TEXT)
    type_as_you_go: bool = setting(Key.TYPE_AS_YOU_GO)
    first_run_done: bool = setting(Key.FIRST_RUN_DONE)
    recommend_budget_ms: int = setting(Key.RECOMMEND_BUDGET_MS)

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


_UNMATCHED = {key.value for key in Key} ^ {f.name for f in dataclasses.fields(Settings)}
if _UNMATCHED:  # a setting added to `Key` without its field, or a field without its key
    raise TypeError(f"Settings fields and Key members differ: {sorted(_UNMATCHED)}")


def _plain(value: object) -> object:
    return value.value if isinstance(value, Choice) else value


def _require_key(name: str) -> Key:
    try:
        return Key(name)
    except ValueError:
        raise SettingsError(f"unknown setting {shown(name)}") from None


def parse_settings(data: object) -> tuple[Settings, list[str]]:
    """Like `Settings.from_json`, but returns the warnings instead of logging them.

    Raises:
        SettingsError: if `data` is not an object or a value is invalid.
    """
    values, warnings = _known_values(data)
    return Settings(**values), warnings


def _known_values(data: object) -> tuple[dict[str, Any], list[str]]:
    """The members of `data` that name a setting, and warnings for the others."""
    if not isinstance(data, Mapping):
        raise SettingsError(f"settings must be a JSON object (got {type(data).__name__})")
    known = {key.value for key in Key}
    unknown = sorted(str(name) for name in data if name not in known)
    warnings = [f"ignored unknown setting {shown(name)}" for name in unknown]
    values = {name: value for name, value in data.items() if name in known}
    threads = values.get(Key.THREADS.value)
    if isinstance(threads, int) and not isinstance(threads, bool) and threads > max_threads():
        # A file from a bigger machine (a synced or portable VOXTRAY_HOME) is not a user
        # mistake; clamping keeps every other setting instead of resetting them all.
        values[Key.THREADS.value] = max_threads()
        warnings.append(f"setting threads lowered from {threads} to {max_threads()} CPUs")
    return values, warnings


def _drop_refused(values: dict[str, Any]) -> list[str]:
    """Remove the values their setting refuses (so its default is used); why, one each."""
    refused = []
    for key in Key:
        problem = refusal(key, values[key.value]) if key.value in values else None
        if problem is not None:
            del values[key.value]
            refused.append(problem)
    return refused


class SettingsStore:
    """Reads and writes settings.json.

    Args:
        path: the settings file; by default `settings.json` in the data folder.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else data_home() / SETTINGS_FILE

    def load(self) -> tuple[Settings, list[str]]:
        """The saved settings and one-line warnings for the UI; never raises.

        A missing file gives the defaults and no warning; so does anything but a regular
        file (a FIFO, a link to a device), which is left alone, with a warning. A file
        that cannot be used as a whole (not JSON, not an object, over `MAX_FILE_BYTES`)
        is moved aside to a `.bak` file and the defaults are returned with a warning
        naming that file. A value its setting refuses falls back to the default, with a
        warning, and the file as it was is copied to a `.bak` first: the next save would
        otherwise lose what the user wrote.
        """
        remove_stale_temps(self.path)
        try:
            raw = read_regular(self.path, MAX_FILE_BYTES)
        except FileNotFoundError:
            return Settings(), []
        except UnusableFileError as exc:
            if exc.errno == errno.EFBIG:
                return Settings(), [self._set_aside(_reason(exc))]
            return Settings(), [f"ignored {self.path}: {_reason(exc)}; using defaults"]
        except OSError as exc:
            return Settings(), [f"cannot read {self.path} ({_reason(exc)}); using defaults"]
        try:
            values, warnings = _known_values(_decode(raw))
        except SettingsError as exc:
            return Settings(), [self._set_aside(str(exc))]
        refused = _drop_refused(values)
        if refused:
            kept = self._keep_copy(raw)
            warnings += [f"{problem}; using its default; {kept}" for problem in refused]
        return Settings(**values), warnings

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

    def _keep_copy(self, raw: bytes) -> str:
        """Copy the file's bytes to a `.bak` (one already holding them is reused); what
        was done, in words."""
        folder, name = self.path.parent, self.path.name
        for backup in sorted(folder.glob(glob.escape(name) + "*.bak")):
            with contextlib.suppress(OSError):
                if read_regular(backup, len(raw)) == raw:
                    return f"the file as it was is kept as {backup}"
        backup = _free_backup_name(self.path)
        try:
            atomic_write(backup, raw, 0o600)
        except OSError as exc:
            return f"no copy of the file could be kept ({_reason(exc)})"
        return f"the file as it was is kept as {backup}"


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
