"""Settings: validation, enum-typed choices, the JSON file and crash-safe saving."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.audio import REPO
from tests.support.special_files import SAID, put_special
from voxtray.choices import Engine, HotkeyBackend, HotkeyMode, OutputMethod, Precision, Provider
from voxtray.config import (
    MAX_FILE_BYTES,
    Key,
    Settings,
    SettingsError,
    SettingsStore,
    parse_settings,
)
from voxtray.errors import DiskError, ExitCode
from voxtray.modes import DEFAULT_MODES

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
    "spoken_punctuation": True,
    "spoken_commands": True,
    "replacements_enabled": True,
    "replacements": "",
    "vocabulary": "",
    "sound_cues": True,
    "remote_url": "",
    "remote_protocol": "openai",
    "remote_model": "",
    "remote_timeout_s": 10.0,
    "cleanup_enabled": False,
    "cleanup_endpoint": "http://localhost:11434/v1",
    "cleanup_model": "",
    "cleanup_prompt": "",
    "cleanup_budget_ms": 2000,
    "cleanup_timeout_s": 30.0,
    "cleanup_consented_hosts": "",
    "modes": DEFAULT_MODES,
    "history_audio_mb": 200,
    "history_audio_days": 30,
    "live_text": True,
    "type_as_you_go": False,
    "first_run_done": False,
    "recommend_budget_ms": 300,
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


def test_choices_are_enum_members_whatever_was_passed() -> None:
    from_strings = Settings(
        engine="ort",  # type: ignore[arg-type]
        provider="cuda",  # type: ignore[arg-type]
        precision="int8",  # type: ignore[arg-type]
        hotkey_mode="toggle",  # type: ignore[arg-type]
        hotkey_backend="none",  # type: ignore[arg-type]
        output="clipboard",  # type: ignore[arg-type]
    )
    assert from_strings.engine is Engine.ORT
    assert from_strings.provider is Provider.CUDA
    assert from_strings.precision is Precision.INT8
    assert from_strings.hotkey_mode is HotkeyMode.TOGGLE
    assert from_strings.hotkey_backend is HotkeyBackend.NONE
    assert from_strings.output is OutputMethod.CLIPBOARD
    assert Settings().engine is Engine.AUTO
    assert Settings.from_json({"engine": "sherpa"}).engine is Engine.SHERPA
    assert Settings().replace(output="wtype").output is OutputMethod.WTYPE
    assert from_strings == Settings(
        engine=Engine.ORT,
        provider=Provider.CUDA,
        precision=Precision.INT8,
        hotkey_mode=HotkeyMode.TOGGLE,
        hotkey_backend=HotkeyBackend.NONE,
        output=OutputMethod.CLIPBOARD,
    )


def test_json_holds_plain_strings() -> None:
    data = CUSTOM.to_json()
    for key in (Key.ENGINE, Key.PROVIDER, Key.PRECISION, Key.HOTKEY_MODE, Key.OUTPUT):
        assert type(data[key.value]) is str
    assert json.loads(json.dumps(data)) == data


def test_frozen() -> None:
    with pytest.raises(AttributeError):
        Settings().engine = "ort"  # type: ignore[misc]


# --- Validation -----------------------------------------------------------------------

INVALID: list[tuple[str, object, str]] = [
    ("model", "", "non-empty string"),
    ("model", 7, "non-empty string"),
    ("engine", "onnx", "auto, ort, sherpa"),
    ("provider", "rocm", "auto, cpu, cuda, tensorrt"),
    ("gpu_index", -1, "0 to 255"),
    ("gpu_index", 1.0, "0 to 255"),
    ("gpu_index", True, "0 to 255"),
    ("gpu_index", -(10**400), "0 to 255"),
    ("precision", "fp16", "auto, int8, fp32"),
    ("microphone", -2, "device index >= 0"),
    ("microphone", "   ", "device name"),
    ("microphone", 1.5, "device name"),
    ("microphone", True, "device name"),
    ("hotkey", "", "non-empty string"),
    ("hotkey", "ctrl+banana", "unknown key 'banana'"),
    ("hotkey", "ctrl+alt+a+b", "such as ctrl+alt+space"),
    ("hotkey", "ctrl++space", "empty part"),
    ("hotkey_mode", "press", "hold, toggle, hold_or_tap"),
    ("hotkey_backend", None, "auto, pynput, keyboard, evdev, portal, none"),
    ("hotkey_backend", "xlib", "auto, pynput, keyboard, evdev, portal, none"),
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
    ("language", "", "auto or a language code"),
    ("language", "german", "auto or a language code"),
    ("threads", 0, f"1 to {os.cpu_count() or 1}"),
    ("threads", (os.cpu_count() or 1) + 1, f"1 to {os.cpu_count() or 1}"),
    ("spoken_punctuation", "yes", "true or false"),
    ("spoken_commands", 0, "true or false"),
    ("replacements_enabled", None, "true or false"),
    ("replacements", None, "a string"),
    ("replacements", ["vox tray", "Voxtray"], "a string"),
    ("replacements", "vox tray -> Voxtray\nno arrow", "'spoken -> written', both filled in"),
    ("replacements", "vox tray ->\n -> x\nok -> fine", "(lines 1, 2 are not)"),
    ("vocabulary", 3, "a string"),
    ("vocabulary", "\n".join(f"word{i}" for i in range(5001)), "at most 5000 words and names"),
    ("sound_cues", "on", "true or false"),
    ("remote_url", "gpu-box:8000", "http(s)://HOST[:PORT] or tcp://HOST:PORT"),
    ("remote_url", "http://", "http(s)://HOST[:PORT]"),
    ("remote_url", None, "empty or a server URL"),
    ("remote_protocol", "grpc", "openai, wyoming"),
    ("remote_model", None, "a string"),
    ("remote_timeout_s", 0, "1 to 600"),
    ("remote_timeout_s", 601, "1 to 600"),
    ("cleanup_enabled", "yes", "true or false"),
    ("cleanup_endpoint", "", "non-empty string"),
    ("cleanup_endpoint", "ftp://host/v1", "http or https"),
    ("cleanup_endpoint", "http://user:sk-1@host/v1", "API key field"),
    ("cleanup_model", None, "a string"),
    ("cleanup_prompt", "x" * 4001, "at most 4000 characters"),
    ("cleanup_budget_ms", 99, "100 to 30000"),
    ("cleanup_timeout_s", 601, "1 to 600"),
    ("cleanup_consented_hosts", "https://gpu-box", "is not a host name"),
    ("modes", 3, "a string"),
    ("modes", "x: app=y\n" * 3000, "at most 20000 characters"),
    ("history_audio_mb", -1, "0 to 100000"),
    ("history_audio_days", 4000, "0 to 3650"),
    ("live_text", 1, "true or false"),
    ("type_as_you_go", "yes", "true or false"),
    ("first_run_done", "no", "true or false"),
    ("recommend_budget_ms", 10, "50 to 10000"),
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
    with pytest.raises(SettingsError, match="0 to 255"):  # the one range, as on the CLI
        Settings.from_json({"gpu_index": huge})


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
    (tmp_path / "file").write_text("a file where the data folder should be")
    path = tmp_path / "file" / "settings.json"
    settings, warnings = SettingsStore(path).load()
    assert settings == Settings()
    assert warnings == [f"cannot read {path} (Not a directory); using defaults"]


KEPT = "using its default; the file as it was is kept as"


# A FIFO would block the read, and the app's start, for good; /dev/zero never ends.
@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", SAID)
def test_what_is_no_regular_file_is_ignored_and_left_alone(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "settings.json"
    put_special(kind, path)
    settings, warnings = SettingsStore(path).load()
    assert settings == Settings()
    assert warnings == [f"ignored {path}: {SAID[kind]}; using defaults"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_a_file_over_the_size_cap_is_set_aside_unread(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    with path.open("wb") as sparse:
        sparse.truncate(MAX_FILE_BYTES + 1)
    settings, warnings = SettingsStore(path).load()
    assert settings == Settings()
    backup = tmp_path / "settings.json.bak"
    assert warnings == [
        f"settings file was unusable (larger than 8 MiB); using defaults; kept it as {backup}"
    ]
    assert backup.stat().st_size == MAX_FILE_BYTES + 1


def test_a_link_to_a_settings_file_elsewhere_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "voxtray.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"engine": "ort", "hotkey": "f9"}))
    (tmp_path / "settings.json").symlink_to(real)
    assert SettingsStore(tmp_path / "settings.json").load() == (
        Settings(engine="ort", hotkey="f9"),
        [],
    )


def test_a_refused_value_falls_back_alone_and_the_file_is_kept(tmp_path: Path) -> None:
    words = "\n".join(f"word{i}" for i in range(5001))
    chosen = {"model": "whisper-base", "hotkey": "f9", "vocabulary": words, "engine": "warp"}
    path = tmp_path / "settings.json"
    raw = json.dumps(chosen).encode()
    path.write_bytes(raw)
    store = SettingsStore(path)
    settings, warnings = store.load()
    assert settings == Settings(model="whisper-base", hotkey="f9")
    backup = tmp_path / "settings.json.bak"
    assert warnings == [
        "setting engine must be one of auto, ort, sherpa, remote (got \"warp\"); " + KEPT
        + f" {backup}",
        "setting vocabulary must be at most 5000 words and names (it holds 5001); " + KEPT
        + f" {backup}",
    ]  # fmt: skip
    assert path.read_bytes() == raw
    assert backup.read_bytes() == raw
    assert store.load() == (settings, warnings)  # the same copy, not one more each start
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json", "settings.json.bak"]
    store.save(settings.replace(threads=1))
    assert backup.read_bytes() == raw  # what the user wrote outlives the next save


def test_the_file_the_window_and_the_settings_refuse_with_the_same_words(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    for key, value in [("hotkey", "ctrl+banana"), ("replacements", "a ->\nb -> c")]:
        path.write_text(json.dumps({key: value}))
        _, warnings = SettingsStore(path).load()
        with pytest.raises(SettingsError) as refused:
            Settings().replace(**{key: value})
        assert warnings[0].startswith(f"{refused.value}; using its default")


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
    if store.path.exists():  # it parsed: unknown keys and refused values at most
        assert all("ignored unknown" in w or "lowered" in w or KEPT in w for w in warnings)
        if any(KEPT in w for w in warnings):
            assert (folder / "settings.json.bak").read_bytes() == raw
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
    from voxtray.config import Settings, SettingsStore

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


# Text for one side of a replacement: on one line, without the arrow.
PHRASE = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=12
).filter(lambda text: bool(text.strip()) and "->" not in text and not text.endswith("-"))

VALID_SETTINGS = st.builds(
    Settings,
    model=st.text(min_size=1, max_size=20).filter(str.strip),
    engine=st.sampled_from(Engine),
    provider=st.sampled_from(Provider),
    gpu_index=st.integers(min_value=0, max_value=255),
    precision=st.sampled_from(Precision),
    microphone=st.none()
    | st.integers(min_value=0, max_value=64)
    | st.text(min_size=1).filter(str.strip),
    hotkey=st.sampled_from(["ctrl+alt+space", "f9", "<cmd>+;"]),
    hotkey_mode=st.sampled_from(HotkeyMode),
    hotkey_backend=st.sampled_from(HotkeyBackend),
    output=st.sampled_from(OutputMethod),
    vad_threshold=st.floats(min_value=0.05, max_value=0.95),
    min_silence_ms=st.integers(min_value=100, max_value=3000),
    preroll_ms=st.integers(min_value=300, max_value=2000),
    tail_ms=st.integers(min_value=300, max_value=3000),
    hud_enabled=st.booleans(),
    start_at_login=st.booleans(),
    threads=st.integers(min_value=1, max_value=os.cpu_count() or 1),
    spoken_punctuation=st.booleans(),
    spoken_commands=st.booleans(),
    replacements_enabled=st.booleans(),
    replacements=st.lists(st.tuples(PHRASE, PHRASE), max_size=4).map(
        lambda pairs: "\n".join(f"{said} -> {written}" for said, written in pairs)
    ),
    vocabulary=st.text(max_size=80),
    sound_cues=st.booleans(),
    history_audio_mb=st.integers(min_value=0, max_value=100_000),
    history_audio_days=st.integers(min_value=0, max_value=3650),
    live_text=st.booleans(),
    type_as_you_go=st.booleans(),
    first_run_done=st.booleans(),
    recommend_budget_ms=st.integers(min_value=50, max_value=10_000),
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(VALID_SETTINGS)
def test_any_valid_settings_survive_save_and_load(tmp_path: Path, value: Settings) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    store.save(value)
    assert store.load() == (value, [])
