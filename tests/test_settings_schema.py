"""One definition per setting: settings validation, the command line and the settings
window all read `voxtray.settings_schema`, so no range or choice list exists twice."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from voxtray.cli.args import MAX_GPU_INDEX, setting_number, thread_count
from voxtray.config import Settings, SettingsError, max_threads
from voxtray.settings_schema import SCHEMA, Applies, Key, Section, in_section, int_bounds
from voxtray.ui.app import HOTKEY_KEYS, RELOAD_KEYS


def test_every_key_has_one_entry_and_every_field_its_default() -> None:
    assert list(SCHEMA) == list(Key)
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    assert set(fields) == {key.value for key in Key}
    defaults = Settings()
    for key, spec in SCHEMA.items():
        assert spec.key is key
        assert defaults.get(key) == spec.initial(), key
        assert fields[key.value].metadata["spec"] is spec, key  # the field carries its Spec


def test_a_spec_is_given_by_keyword_and_takes_its_type_from_its_default() -> None:
    spec = Key.TAIL_MS.spec
    with pytest.raises(TypeError):
        type(spec)(400, Section.ADVANCED, "Tail", "Help.")  # type: ignore[misc]
    assert (spec.kind, Key.VAD_THRESHOLD.spec.kind, Key.HOTKEY.spec.kind) == (int, float, str)
    assert Key.ENGINE.spec.choices is type(Settings().engine)
    assert Key("tail_ms") is Key.TAIL_MS


def test_every_entry_has_a_section_a_label_and_plain_help() -> None:
    for spec in SCHEMA.values():
        assert spec.label.replace("&", "").strip(), spec.key
        assert spec.help.endswith("."), spec.key
        assert len(spec.help) < 200, spec.key
    assert {spec.section for spec in SCHEMA.values()} == set(Section)
    assert in_section(Section.ADVANCED)  # the expert keys
    for spec in SCHEMA.values():
        if spec.choices is not None:
            assert set(spec.choice_help) == set(spec.choices.values()), spec.key


def test_mnemonics_do_not_clash_within_a_section() -> None:
    for section in Section:
        letters = [
            s.label[s.label.index("&") + 1].lower() for s in in_section(section) if "&" in s.label
        ]
        assert len(letters) == len(set(letters)), (section, letters)


@pytest.mark.parametrize("key", [k for k, s in SCHEMA.items() if s.low is not None])
def test_ranges_are_enforced_at_both_ends(key: Key) -> None:
    spec = SCHEMA[key]
    low, top = spec.low, spec.top()
    assert low is not None
    assert top is not None
    Settings(**{key.value: spec.kind(low)})
    Settings(**{key.value: spec.kind(top)})
    step = 1 if spec.kind is int else 0.01
    for bad in (low - step, top + step):
        with pytest.raises(SettingsError, match=f"{low:g} to {top:g}"):
            Settings(**{key.value: spec.kind(bad)})


def test_gpu_index_has_one_range_in_settings_and_on_the_command_line() -> None:
    assert int_bounds(Key.GPU_INDEX) == (0, MAX_GPU_INDEX)
    Settings(gpu_index=MAX_GPU_INDEX)
    with pytest.raises(SettingsError):
        Settings(gpu_index=MAX_GPU_INDEX + 1)
    with pytest.raises(SettingsError):
        Settings.from_json(json.loads(json.dumps({"gpu_index": MAX_GPU_INDEX + 1})))


def test_command_line_ranges_come_from_the_settings() -> None:
    parse = thread_count()
    assert parse(str(max_threads())) == max_threads()
    with pytest.raises(argparse.ArgumentTypeError):
        parse(str(max_threads() + 1))
    timeout = setting_number(Key.REMOTE_TIMEOUT_S)
    assert timeout("600") == 600.0
    for bad in ("0.5", "601", "nan", "ten"):
        with pytest.raises(argparse.ArgumentTypeError, match="1 to 600 s"):
            timeout(bad)


def test_what_reloads_is_read_from_the_entries() -> None:
    assert set(RELOAD_KEYS) == {k for k, s in SCHEMA.items() if s.applies is Applies.RELOAD}
    assert set(HOTKEY_KEYS) == {Key.HOTKEY, Key.HOTKEY_MODE, Key.HOTKEY_BACKEND}
    assert {Key.MODEL, Key.ENGINE, Key.VOCABULARY, Key.GPU_INDEX} <= set(RELOAD_KEYS)
    assert Key.SOUND_CUES not in RELOAD_KEYS
