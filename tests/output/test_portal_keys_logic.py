"""The portal output's choices that need no desktop: what is typed, what is pasted, the
consent file, the shortcut's trigger text."""

from __future__ import annotations

from pathlib import Path

import pytest

from voxtray.cli.guard import worded
from voxtray.desktop import data_control
from voxtray.desktop.consent import Consent, ConsentStore
from voxtray.desktop.remote_keyboard import Grant, RemoteKeyboard, keysym_of, typable
from voxtray.desktop.wayland_wire import socket_path, string, uint
from voxtray.hotkeys.keys import parse_hotkey
from voxtray.hotkeys.portal_listener import preferred_trigger
from voxtray.output.portal_keys import PortalKeysOutput, should_type
from voxtray.output.tools import ConsentNeeded
from voxtray.ui.worker import ASK_AGAIN
from voxtray.ui.worker import worded as window_worded


def test_ascii_is_typed_and_accents_are_pasted() -> None:
    assert keysym_of("a") == 0x61
    assert keysym_of("\n") == 0xFF0D
    assert keysym_of("é") is None
    assert should_type("Hello, world! 42\n" * 20)
    assert not should_type("café")
    assert not typable("20 °C — ok")


def test_consent_round_trip_and_damaged_file(tmp_path: Path) -> None:
    store = ConsentStore(tmp_path)
    assert store.load().state is Consent.UNASKED
    store.save(Consent.GRANTED, "8f6d2c1e-0000-4000-8000-000000000000")
    assert store.load().restore_token == "8f6d2c1e-0000-4000-8000-000000000000"
    assert (store.path.stat().st_mode & 0o777) == 0o600
    store.save(Consent.DENIED)
    assert store.load().state is Consent.DENIED
    assert store.load().restore_token is None
    store.path.write_text("[not an object")
    assert store.load().state is Consent.UNASKED


def test_triggers_in_the_shortcuts_form() -> None:
    assert preferred_trigger(parse_hotkey("ctrl+alt+space")) == "CTRL+ALT+space"
    assert preferred_trigger(parse_hotkey("super+f9")) == "LOGO+F9"
    assert preferred_trigger(parse_hotkey("right_ctrl")) == "Control_R"


def test_not_wayland_says_why() -> None:
    output = PortalKeysOutput({"DISPLAY": ":9"}, "linux")
    assert output.problem() == "the desktop portal's keyboard is used on Wayland"


class _NeverAsk(RemoteKeyboard):
    def start(self, timeout: float = 0.0) -> Grant:
        raise AssertionError("asked the desktop after the user said no")


@pytest.mark.parametrize(
    ("state", "said"), [(Consent.DENIED, "refused"), (Consent.REVOKED, "withdrawn")]
)
def test_refused_consent_is_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: Consent, said: str
) -> None:
    store = ConsentStore(tmp_path)
    store.save(state)
    env = {"WAYLAND_DISPLAY": "wayland-none", "XDG_RUNTIME_DIR": str(tmp_path)}
    output = PortalKeysOutput(env, "linux", keyboard=_NeverAsk(env, store))
    spilled: list[str] = []
    monkeypatch.setattr(output, "spill", lambda text: spilled.append(text))
    output.prepare()
    assert output._starting is None
    with pytest.raises(ConsentNeeded, match=f"it was {said}.*clipboard") as refused:
        output._allowed("café")
    assert spilled == ["café"]
    # The core names no front end; each adds how it asks again.
    assert "voxtray" not in str(refused.value)
    assert worded(refused.value).endswith("run `voxtray doctor` to be asked again")
    assert window_worded(refused.value).endswith(ASK_AGAIN)


def test_wire_encoding() -> None:
    assert string("abc") == b"\x04\x00\x00\x00abc\x00"
    assert string("abcd") == b"\x05\x00\x00\x00abcd\x00\x00\x00\x00"
    assert uint(7) == b"\x07\x00\x00\x00"
    assert socket_path({"WAYLAND_DISPLAY": "wayland-1", "XDG_RUNTIME_DIR": "/run/u"}) == (
        "/run/u/wayland-1"
    )
    assert socket_path({"WAYLAND_DISPLAY": "/tmp/w"}) == "/tmp/w"
    assert socket_path({}) is None


def test_no_compositor_means_the_tools_are_asked(tmp_path: Path) -> None:
    env = {"WAYLAND_DISPLAY": "wayland-none", "XDG_RUNTIME_DIR": str(tmp_path)}
    assert data_control.selections(env) is None
    assert not data_control.primary_settable(env)
    assert not data_control.PrimaryOffer(env, ["text/plain"]).start("x")


def test_a_closed_keyboard_starts_no_session_again(tmp_path: Path) -> None:
    """Closed (a replaced output, quitting), it never opens a session nothing would end."""
    keyboard = RemoteKeyboard({"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"},
                              ConsentStore(tmp_path))  # fmt: skip
    keyboard.close()
    grant = keyboard.start(timeout=1)
    assert not grant.granted
    assert grant.reason == "remote control was closed"
    assert not keyboard.active
