"""Whole dictations whose delivery is checked on the accessibility bus: a real clip through
the real model, xdotool typing into a real window on Xvfb, the outcome in history and in
`status`; a focused button gets no keys and the text goes to the clipboard instead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import atspi as support
from tests.support import x11
from tests.support.dictation_rig import build_dictation
from tests.support.models import ensure_installed
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.waiting import wait_for
from voxtray.config import Settings
from voxtray.dictation.session import Dictation
from voxtray.models.store import ModelStore
from voxtray.output.verify import FieldCheck
from voxtray.output.xdotool import XdotoolOutput

pytestmark = pytest.mark.skipif(
    bool(x11.missing_tools() or support.missing()),
    reason=support.missing() or f"needs {', '.join(x11.missing_tools())}",
)


@pytest.fixture
def bus_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    with support.x_display_with_bus() as env:
        for key in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_SESSION_TYPE"):
            monkeypatch.setenv(key, env[key])
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        yield env


def dictate(tmp_path: Path, store: ModelStore, env: dict[str, str]) -> tuple[Dictation, str]:
    for name in store.catalog.defaults:
        ensure_installed(store, name)
    rig = build_dictation(
        store, tmp_path / "history.sqlite3", output_factory=lambda name: XdotoolOutput(env)
    )
    rig.dictation.load(Settings())
    rig.say()
    assert rig.dictation.checks.wait(5)
    return rig.dictation, "\n".join(rig.warnings)


def test_a_dictation_is_verified_in_history_and_status(
    bus_env: dict[str, str], tmp_path: Path, model_store: ModelStore
) -> None:
    window = x11.TargetWindow(bus_env["DISPLAY"], tmp_path, support.qt_env(bus_env))
    try:
        window.focus()
        wait_for(lambda: FieldCheck(bus_env).capture().widget is not None, 10, "no focus")
        dictation, _ = dictate(tmp_path, model_store, bus_env)
        try:
            last = dictation.status()["last"]
            assert last["verified"] == "verified"
            assert_heard(BIRCH, window.text(), SENTENCE_WER)
            assert dictation.last is not None
            assert dictation.last.history_id is not None
            entry = dictation.history.get(dictation.last.history_id)
            assert entry is not None
            assert entry.verified == "verified"
            assert entry.delivered
            assert "verify" in last["timings_ms"]
        finally:
            dictation.close()
    finally:
        window.close()


def test_a_focused_button_gets_the_clipboard_not_keys(
    bus_env: dict[str, str], tmp_path: Path, model_store: ModelStore
) -> None:
    button = support.GtkTarget("button", tmp_path, bus_env)
    try:
        x11.xdotool(bus_env["DISPLAY"], "windowfocus", "--sync", button.window)
        wait_for(lambda: FieldCheck(bus_env).capture().widget is not None, 10, "no focus")
        dictation, warnings = dictate(tmp_path, model_store, bus_env)
        try:
            last = dictation.status()["last"]
            assert last["verified"] == "missing"
            assert not last["delivered"]
            assert "not a text field" in warnings
            clipboard = x11.xclip_get(bus_env["DISPLAY"]) or b""
            assert_heard(BIRCH, clipboard.decode(), SENTENCE_WER)
            assert dictation.last is not None
            assert dictation.last.history_id is not None
            entry = dictation.history.get(dictation.last.history_id)
            assert entry is not None
            assert entry.verified == "missing"
        finally:
            dictation.close()
    finally:
        button.close()
