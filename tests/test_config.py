"""Settings: validation, the JSON file, crash-safe saving and the start-at-login entry."""

from __future__ import annotations

import json
import os
import plistlib
import stat
import subprocess
import sys
import textwrap
import time
import types
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import config
from app.config import Key, Settings, SettingsError, SettingsStore, parse_settings
from app.errors import DiskError, ExitCode

REPO = Path(__file__).resolve().parents[1]

DEFAULTS: dict[str, Any] = {
    "model": "whisper-tiny.en",
    "engine": "auto",
    "provider": "auto",
    "gpu_index": 0,
    "precision": "auto",
    "microphone": None,
    "hotkey": "ctrl+alt+space",
    "hotkey_mode": "hold_or_tap",
    "hotkey_backend": "auto",
    "output": "auto",
    "vad_threshold": 0.5,
    "min_silence_ms": 400,
    "preroll_ms": 400,
    "tail_ms": 400,
    "hud_enabled": True,
    "start_at_login": False,
    "language": "en",
    "threads": min(2, os.cpu_count() or 1),
}

CUSTOM = Settings(
    model="whisper-base",
    engine="sherpa",
    provider="cuda",
    gpu_index=1,
    precision="int8",
    microphone="USB Mic (hw:2,0)",
    hotkey="f9",
    hotkey_mode="toggle",
    hotkey_backend="keyboard",
    output="clipboard",
    vad_threshold=0.3,
    min_silence_ms=800,
    preroll_ms=1000,
    tail_ms=600,
    hud_enabled=False,
    start_at_login=True,
    language="de",
    threads=1,
)


# --- Keys and defaults ----------------------------------------------------------------


def test_keys_match_fields_in_order() -> None:
    assert [key.value for key in Key] == [f.name for f in fields(Settings)]
    assert list(DEFAULTS) == [key.value for key in Key]


def test_defaults() -> None:
    assert Settings().to_json() == DEFAULTS


def test_key_is_a_string() -> None:
    assert isinstance(Key.HOTKEY, str)
    assert Key("vad_threshold") is Key.VAD_THRESHOLD
    assert str(Key.HOTKEY) == "hotkey"
    assert {"hotkey": 1}[Key.HOTKEY] == 1  # a Key works wherever its name does


def test_get_by_key() -> None:
    for key in Key:
        assert CUSTOM.get(key) == getattr(CUSTOM, key.value)
    assert Settings().get(Key.MICROPHONE) is None


def test_replace_returns_a_validated_copy() -> None:
    base = Settings()
    changed = base.replace(engine="ort", microphone=3)
    assert (changed.engine, changed.microphone) == ("ort", 3)
    assert base.engine == "auto"
    with pytest.raises(SettingsError, match="engine"):
        base.replace(engine="onnx")
    with pytest.raises(SettingsError, match="colour"):
        base.replace(colour="red")


def test_frozen() -> None:
    with pytest.raises(AttributeError):
        Settings().engine = "ort"  # type: ignore[misc]


# --- Validation -----------------------------------------------------------------------

INVALID: list[tuple[str, object, str]] = [
    ("model", "", "non-empty string"),
    ("model", 7, "non-empty string"),
    ("engine", "onnx", "auto, ort, sherpa"),
    ("provider", "rocm", "auto, cpu, cuda, tensorrt"),
    ("gpu_index", -1, ">= 0"),
    ("gpu_index", 1.0, ">= 0"),
    ("gpu_index", True, ">= 0"),
    ("gpu_index", -(10**400), ">= 0"),
    ("precision", "fp16", "auto, int8, fp32"),
    ("microphone", -2, "device index >= 0"),
    ("microphone", "   ", "device name"),
    ("microphone", 1.5, "device name"),
    ("microphone", True, "device name"),
    ("hotkey", "", "non-empty string"),
    ("hotkey_mode", "press", "hold, toggle, hold_or_tap"),
    ("hotkey_backend", None, "non-empty string"),
    ("output", "xclip", "auto, xdotool, pynput, keyboard, wtype, ydotool, clipboard"),
    ("vad_threshold", 0.0, "0.05 to 0.95"),
    ("vad_threshold", 0.96, "0.05 to 0.95"),
    ("vad_threshold", float("nan"), "0.05 to 0.95"),
    ("vad_threshold", float("inf"), "0.05 to 0.95"),
    ("vad_threshold", "0.5", "0.05 to 0.95"),
    ("vad_threshold", 10**400, "0.05 to 0.95"),
    ("min_silence_ms", 99, "100 to 3000"),
    ("min_silence_ms", 3001, "100 to 3000"),
    ("min_silence_ms", 400.0, "100 to 3000"),
    ("preroll_ms", 299, "300 to 2000"),
    ("preroll_ms", 2001, "300 to 2000"),
    ("tail_ms", 299, "300 to 3000"),
    ("tail_ms", 3001, "300 to 3000"),
    ("hud_enabled", 1, "true or false"),
    ("hud_enabled", "yes", "true or false"),
    ("start_at_login", None, "true or false"),
    ("language", "", "non-empty string"),
    ("threads", 0, f"1 to {os.cpu_count() or 1}"),
    ("threads", (os.cpu_count() or 1) + 1, f"1 to {os.cpu_count() or 1}"),
]


@pytest.mark.parametrize(("name", "value", "allowed"), INVALID)
def test_each_invalid_value_gives_a_one_line_error_naming_the_key(
    name: str, value: Any, allowed: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings(**{name: value})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"setting {name} must be ")
    assert allowed in message
    assert caught.value.exit_code is ExitCode.BAD_INPUT


def test_every_key_has_an_invalid_case() -> None:
    assert {name for name, _, _ in INVALID} == {key.value for key in Key}


def test_error_message_stays_short_for_long_values() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings(engine="x\n" * 1000)
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 120


@pytest.mark.parametrize("value", [None, 0, 12, "pulse", "USB Mic (hw:2,0)"])
def test_valid_microphones(value: object) -> None:
    assert Settings(microphone=value).microphone == value  # type: ignore[arg-type]


def test_range_edges_are_allowed() -> None:
    edges = Settings(
        vad_threshold=0.05, min_silence_ms=100, preroll_ms=2000, tail_ms=3000, threads=1
    )
    assert edges.vad_threshold == 0.05
    assert Settings(threads=os.cpu_count() or 1).threads == (os.cpu_count() or 1)


def test_validate_catches_values_smuggled_past_the_constructor() -> None:
    settings = Settings()
    object.__setattr__(settings, "output", "fax")
    with pytest.raises(SettingsError, match="output"):
        settings.validate()


# --- JSON -----------------------------------------------------------------------------


def test_json_round_trip() -> None:
    text = json.dumps(CUSTOM.to_json())
    assert Settings.from_json(json.loads(text)) == CUSTOM


def test_missing_keys_take_defaults() -> None:
    assert Settings.from_json({"engine": "ort"}) == Settings(engine="ort")
    assert Settings.from_json({}) == Settings()


def test_unknown_keys_are_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    settings, warnings = parse_settings({"engine": "ort", "colour": "red"})
    assert settings == Settings(engine="ort")
    assert warnings == ['ignored unknown setting "colour"']
    assert Settings.from_json({"colour": "red"}) == Settings()
    assert "colour" in caplog.text


def test_threads_from_a_bigger_machine_are_clamped_not_rejected() -> None:
    settings, warnings = parse_settings({"threads": 10_000, "engine": "ort"})
    assert settings.threads == (os.cpu_count() or 1)
    assert settings.engine == "ort"
    assert len(warnings) == 1
    assert "threads" in warnings[0]


@pytest.mark.parametrize("data", [[], "settings", 3, None, [["engine", "ort"]]])
def test_from_json_needs_an_object(data: object) -> None:
    with pytest.raises(SettingsError, match="JSON object"):
        Settings.from_json(data)


def test_huge_json_integers_are_rejected_not_crashing() -> None:
    huge = json.loads("9" * 4000)
    for key in ("gpu_index", "min_silence_ms", "vad_threshold", "microphone"):
        assert isinstance(_outcome({key: -huge}), SettingsError)
    with pytest.raises(SettingsError, match="gpu_index"):
        Settings(gpu_index=-(10**5000))
    assert Settings.from_json({"gpu_index": huge}).gpu_index == huge  # no upper bound


def test_wrong_type_in_json_raises() -> None:
    with pytest.raises(SettingsError, match="threads"):
        Settings.from_json({"threads": "4"})


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
KEY_NAMES = st.sampled_from([key.value for key in Key]) | st.text(max_size=12)


def _outcome(data: object) -> Settings | SettingsError:
    try:
        return Settings.from_json(data)
    except SettingsError as exc:
        return exc


@given(JSON_VALUES)
def test_from_json_raises_only_settings_error_on_any_value(data: object) -> None:
    outcome = _outcome(data)
    if isinstance(outcome, SettingsError):
        assert "\n" not in str(outcome)


@given(st.dictionaries(KEY_NAMES, JSON_VALUES, max_size=len(Key) + 2))
def test_from_json_raises_only_settings_error_on_any_object(data: dict[str, object]) -> None:
    outcome = _outcome(data)
    if isinstance(outcome, SettingsError):
        assert "\n" not in str(outcome)
    else:
        outcome.validate()
        assert Settings.from_json(outcome.to_json()) == outcome


# --- The settings file ----------------------------------------------------------------


def test_default_path_is_in_the_data_folder(voxtray_home: Path) -> None:
    assert SettingsStore().path == voxtray_home / "settings.json"


def test_missing_file_gives_defaults_without_warning(tmp_path: Path) -> None:
    assert SettingsStore(tmp_path / "settings.json").load() == (Settings(), [])


def test_save_load_round_trip(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "deep" / "folder" / "settings.json")
    store.save(CUSTOM)
    assert store.load() == (CUSTOM, [])
    assert json.loads(store.path.read_text(encoding="utf-8")) == CUSTOM.to_json()


def test_saved_file_is_private(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    store.save(Settings())
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    store.path.chmod(0o644)
    store.save(CUSTOM)  # a rewrite makes it private again
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_save_refuses_invalid_settings_and_keeps_the_file(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    store.save(CUSTOM)
    before = store.path.read_bytes()
    bad = Settings()
    object.__setattr__(bad, "threads", 0)
    with pytest.raises(SettingsError, match="threads"):
        store.save(bad)
    assert store.path.read_bytes() == before


def test_unknown_keys_in_the_file_are_warnings_not_corruption(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"engine": "ort", "future_option": 1}', encoding="utf-8")
    settings, warnings = SettingsStore(path).load()
    assert settings == Settings(engine="ort")
    assert warnings == ['ignored unknown setting "future_option"']
    assert path.exists()
    assert not (tmp_path / "settings.json.bak").exists()


CORRUPT_FILES = [
    b"{not json",
    b"",
    b"\xff\xfe\x00garbage",
    b"[1, 2, 3]",
    b'"just a string"',
    b'{"engine": "warp-drive"}',
    b'{"threads": "many"}',
    b"[" * 100_000,
]


@pytest.mark.parametrize("raw", CORRUPT_FILES, ids=range(len(CORRUPT_FILES)))
def test_corrupt_file_is_kept_as_bak_and_defaults_used(tmp_path: Path, raw: bytes) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    store.path.write_bytes(raw)
    settings, warnings = store.load()
    assert settings == Settings()
    assert len(warnings) == 1
    assert "\n" not in warnings[0]
    backup = tmp_path / "settings.json.bak"
    assert str(backup) in warnings[0]
    assert backup.read_bytes() == raw
    assert not store.path.exists()
    assert store.load() == (Settings(), [])


def test_an_existing_bak_is_never_overwritten(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    for round_ in range(3):
        store.path.write_bytes(b"broken %d" % round_)
        _, warnings = store.load()
        assert len(warnings) == 1
    backups = sorted(tmp_path.glob("settings.json*.bak"))
    assert len(backups) == 3
    assert sorted(b.read_bytes() for b in backups) == [b"broken 0", b"broken 1", b"broken 2"]
    assert (tmp_path / "settings.json.bak").read_bytes() == b"broken 0"


def test_unreadable_settings_path_gives_defaults_and_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.mkdir()
    settings, warnings = SettingsStore(path).load()
    assert settings == Settings()
    assert len(warnings) == 1
    assert "cannot read" in warnings[0]


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=300) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
def test_load_never_raises_on_garbage(tmp_path: Path, raw: bytes) -> None:
    folder = tmp_path / os.urandom(8).hex()
    folder.mkdir()
    store = SettingsStore(folder / "settings.json")
    store.path.write_bytes(raw)
    settings, warnings = store.load()
    assert isinstance(settings, Settings)
    assert all("\n" not in warning for warning in warnings)
    if store.path.exists():  # it parsed: unknown keys at most
        assert all("ignored unknown" in w or "lowered" in w for w in warnings)
    else:
        assert settings == Settings()
        assert len(warnings) == 1
        assert (folder / "settings.json.bak").read_bytes() == raw


# --- Atomic saving --------------------------------------------------------------------


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "settings.json")


def test_failed_rename_keeps_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    store.save(CUSTOM)
    before = store.path.read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(DiskError) as caught:
        store.save(Settings())
    assert "No space left on device" in str(caught.value)
    assert str(store.path) in str(caught.value)
    assert store.path.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_interrupt_during_write_keeps_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    store.save(CUSTOM)
    before = store.path.read_bytes()

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.save(Settings())
    assert store.path.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_unwritable_folder_is_a_disk_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(DiskError, match="cannot write"):
        SettingsStore(blocker / "settings.json").save(Settings())


KILL_MID_SAVE = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from app.config import Settings, SettingsStore

    def die(src, dst):
        # The temp file is complete and synced; the process dies before the rename.
        os.kill(os.getpid(), signal.SIGKILL)

    os.replace = die
    SettingsStore(Path(sys.argv[1])).save(Settings(engine="sherpa"))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_killed_mid_save_keeps_the_old_file_and_load_sweeps_the_temp(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    store.save(CUSTOM)
    before = store.path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", KILL_MID_SAVE, str(store.path)], cwd=REPO, check=False
    )
    assert done.returncode == -9
    assert store.path.read_bytes() == before
    temps = _leftovers(tmp_path)
    assert len(temps) == 1  # a crash cannot clean up after itself...
    assert store.load() == (CUSTOM, [])
    assert len(_leftovers(tmp_path)) == 1  # ...a fresh temp may be another save in progress
    old = time.time() - 3600
    os.utime(tmp_path / temps[0], (old, old))
    assert store.load() == (CUSTOM, [])
    assert _leftovers(tmp_path) == []


# --- Start at login -------------------------------------------------------------------


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
    assert not config.start_at_login_enabled()
    written = config.set_start_at_login(True, ["/usr/bin/voxtray", "--tray"])
    assert written == expected
    assert config.start_at_login_enabled()
    values = _desktop_values(expected)
    assert values["Type"] == "Application"
    assert values["Name"] == "Voxtray"
    assert values["Exec"] == "/usr/bin/voxtray --tray"
    assert values["Terminal"] == "false"
    assert stat.S_IMODE(expected.stat().st_mode) == 0o644

    removed = config.set_start_at_login(False, [])
    assert removed == expected
    assert not expected.exists()
    assert not config.start_at_login_enabled()
    config.set_start_at_login(False, [])  # removing twice is fine


def test_autostart_exec_quotes_and_escapes(xdg_config: Path) -> None:
    command = ["/opt/My Apps/python", "-m", "app", "--label=100%", 'say "hi" $HOME', "a\\b"]
    path = config.set_start_at_login(True, command)
    assert path is not None
    exec_value = _desktop_values(path)["Exec"]
    assert exec_value == (
        '"/opt/My Apps/python" -m app --label=100%% "say \\\\"hi\\\\" \\\\$HOME" "a\\\\\\\\b"'
    )


def test_autostart_rewrite_replaces_the_command(xdg_config: Path) -> None:
    config.set_start_at_login(True, ["/old/voxtray"])
    path = config.set_start_at_login(True, ["/new/voxtray"])
    assert path is not None
    assert _desktop_values(path)["Exec"] == "/new/voxtray"


def test_autostart_relative_xdg_config_home_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/config")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config.xdg_autostart_path() == tmp_path / ".config" / "autostart" / "voxtray.desktop"


def test_autostart_empty_command_is_refused(xdg_config: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        config.set_start_at_login(True, [])


def test_autostart_unwritable_is_a_disk_error(xdg_config: Path) -> None:
    xdg_config.write_text("a file where the folder should be")
    with pytest.raises(DiskError):
        config.set_start_at_login(True, ["/usr/bin/voxtray"])


def test_macos_launch_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "darwin")
    command = ["/Applications/Voxtray.app/Contents/MacOS/voxtray", "--tray"]
    path = config.set_start_at_login(True, command)
    assert path == tmp_path / "Library" / "LaunchAgents" / "io.github.voxtray.plist"
    agent = plistlib.loads(path.read_bytes())
    assert agent["ProgramArguments"] == command
    assert agent["RunAtLoad"] is True
    assert agent["Label"] == "io.github.voxtray"
    assert config.start_at_login_enabled()
    assert config.set_start_at_login(False, []) == path
    assert not path.exists()
    assert not config.start_at_login_enabled()


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
    assert config.set_start_at_login(True, command) is None
    assert fake.opened == [r"Software\Microsoft\Windows\CurrentVersion\Run"]
    assert fake.values == {"Voxtray": r'"C:\Program Files\Voxtray\voxtray.exe" --tray'}
    assert config.start_at_login_enabled()
    assert config.set_start_at_login(False, []) is None
    assert fake.values == {}
    assert not config.start_at_login_enabled()
    config.set_start_at_login(False, [])  # removing twice is fine


VALID_SETTINGS = st.builds(
    Settings,
    model=st.text(min_size=1, max_size=20).filter(str.strip),
    engine=st.sampled_from(config.ENGINES),
    provider=st.sampled_from(config.PROVIDERS),
    gpu_index=st.integers(min_value=0, max_value=2**40),
    precision=st.sampled_from(config.PRECISIONS),
    microphone=st.none()
    | st.integers(min_value=0, max_value=64)
    | st.text(min_size=1).filter(str.strip),
    hotkey=st.sampled_from(["ctrl+alt+space", "f9", "<cmd>+;"]),
    hotkey_mode=st.sampled_from(config.HOTKEY_MODES),
    output=st.sampled_from(config.OUTPUTS),
    vad_threshold=st.floats(min_value=0.05, max_value=0.95),
    min_silence_ms=st.integers(min_value=100, max_value=3000),
    preroll_ms=st.integers(min_value=300, max_value=2000),
    tail_ms=st.integers(min_value=300, max_value=3000),
    hud_enabled=st.booleans(),
    start_at_login=st.booleans(),
    threads=st.integers(min_value=1, max_value=os.cpu_count() or 1),
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(VALID_SETTINGS)
def test_any_valid_settings_survive_save_and_load(tmp_path: Path, value: Settings) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    store.save(value)
    assert store.load() == (value, [])
