"""Push-to-talk on GNOME 48 through the GlobalShortcuts portal, in the real tray app.

GNOME Shell 48 runs headless in a Debian 13 root (`tests.support.gnome_root`), with its own
portals and Settings' shortcut dialog; the tray app runs on this machine as a user starts it
(`python -m voxtray`, default settings after set-up), fed real speech through a PulseAudio
virtual microphone. It registers its app ID (writing its desktop entry in the user's data
folder, as a checkout or pip install has none), GNOME asks once whether to add the shortcut
("Add Keyboard Shortcuts", answered through the accessibility bus as a screen reader's user
answers it), and ctrl+alt+space, held down through the compositor's own input path, dictates
while it is held. After the portal restarts, the key is bound again without a question.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.audio import manifest_clip
from tests.support.gnome_root import GnomeDesktop, gnome_desktop
from tests.support.portal_desktop import held_compositor_keys
from tests.support.pulse import VirtualMicrophone, virtual_microphone
from tests.support.recognition import SENTENCE_WER, assert_heard
from tests.support.tray_app import (
    app_status,
    returning_home,
    running_tray_app,
    typed_into_gtk_window,
    wait_for_state,
)
from tests.support.waiting import wait_for
from voxtray.config import Settings
from voxtray.desktop.app_id import ENTRY
from voxtray.history.store import History
from voxtray.hotkeys.keys import parse_hotkey
from voxtray.hotkeys.portal_listener import PortalShortcutBackend
from voxtray.models.store import ModelStore
from voxtray.ui.setup_desktop import shortcut_problem

pytestmark = [pytest.mark.slow, pytest.mark.wayland]

SPOKEN = manifest_clip("ljspeech_LJ050-0131")  # about 100 characters
HOTKEY = [0xFFE3, 0xFFE9, 0x20]  # ctrl+alt+space, the default hotkey


@dataclass
class Running:
    desktop: GnomeDesktop
    mic: VirtualMicrophone
    env: dict[str, str]
    home: Path
    data_home: Path
    asked: bool


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore) -> Iterator[Running]:
    workdir = tmp_path_factory.mktemp("gnome48")
    home = returning_home(workdir, model_store, hotkey_backend=Settings().hotkey_backend)
    data_home = workdir / "share"
    data_home.mkdir()
    with virtual_microphone() as mic, gnome_desktop(workdir, data_home) as desktop:
        env = desktop.client_env()
        env.update({"VOXTRAY_HOME": str(home), "PULSE_SERVER": mic.env["PULSE_SERVER"],
                    "PULSE_COOKIE": mic.env["PULSE_COOKIE"]})  # fmt: skip
        answering = desktop.answer_shortcut_dialog("Add")
        with running_tray_app(env, workdir / "voxtray.log"):
            answering.join(100)
            desktop.leave_overview()
            yield Running(desktop, mic, env, home, data_home, answering.answered)


def _dictate_holding_the_hotkey(running: Running, workdir: Path) -> str:
    """Hold the hotkey over the clip with a GTK window focused; what the window got. The
    desktop's typing question, where it comes, is answered with Allow and Share."""
    answering = running.desktop.allow_remote_interaction()
    try:
        typed = typed_into_gtk_window(
            running.env, running.env, workdir,
            lambda: held_compositor_keys(running.desktop.env, HOTKEY),
            (running.mic, SPOKEN.path), settle_s=60,
        )  # fmt: skip
    finally:
        answering.join(1)
    wait_for_state(running.env, "ready", 30)
    return typed


def test_gnome_48_binds_the_hotkey_for_voxtrays_app_id(running: Running) -> None:
    assert running.asked, "GNOME never showed its Add Keyboard Shortcuts dialog"
    entry = running.data_home / "applications" / ENTRY
    assert entry.is_file()
    assert "-m voxtray" in entry.read_text()
    hotkey = wait_for(
        lambda: (h := app_status(running.env).get("hotkey", {})).get("bound") and h,
        30, lambda: f"never bound: {app_status(running.env)}",
    )  # fmt: skip
    assert hotkey["backend"] == "portal"
    assert "space" in str(hotkey["trigger"]).lower()
    # The set-up window's Typing step promises push-to-talk here, as `auto` binds it.
    assert shortcut_problem(running.env) is None


def test_holding_the_hotkey_on_gnome_48_dictates(running: Running, tmp_path: Path) -> None:
    """Down starts, up stops, and the words are typed through GNOME 48's own keyboard."""
    wait_for(lambda: app_status(running.env).get("hotkey", {}).get("bound"), 30)
    typed = _dictate_holding_the_hotkey(running, tmp_path)
    assert_heard(SPOKEN.reference, typed, SENTENCE_WER)
    last = History(running.home / "history.sqlite3").recent(1)[0]
    assert last.text.strip() == typed.strip()
    assert last.delivered
    print(f"\nGNOME 48: held ctrl+alt+space typed {typed!r}")


def test_the_hotkey_is_bound_again_after_the_portal_restarts(
    running: Running, tmp_path: Path
) -> None:
    """The portal's sessions go when it restarts; GNOME keeps the user's answer for the app
    ID, so the key is bound again without a second question, and still dictates."""
    binds = app_status(running.env)["hotkey"]["binds"]
    asked = running.desktop.answer_shortcut_dialog("Add", timeout=20)
    running.desktop.restart_portal()
    wait_for(
        lambda: app_status(running.env)["hotkey"].get("binds", 0) > binds, 60,
        lambda: f"not bound again: {app_status(running.env)}",
    )  # fmt: skip
    typed = _dictate_holding_the_hotkey(running, tmp_path)
    assert not asked.join(30), "GNOME asked again for a key it had bound"
    assert_heard(SPOKEN.reference, typed, SENTENCE_WER)


def test_cancel_in_gnomes_dialog_leaves_the_key_unbound_and_says_so(tmp_path: Path) -> None:
    """A user who presses Cancel in "Add Keyboard Shortcuts": no binding, and the backend
    says why, which `voxtray status` shows; on a GNOME of its own, which was never asked."""
    (tmp_path / "share").mkdir()
    with gnome_desktop(tmp_path, tmp_path / "share") as desktop:
        answering = desktop.answer_shortcut_dialog("Cancel")
        backend = PortalShortcutBackend(desktop.client_env(), "linux")
        backend.start(parse_hotkey("ctrl+alt+space"), lambda: None, lambda: None)
        try:
            assert answering.join(100), "GNOME never showed its Add Keyboard Shortcuts dialog"
            wait_for(lambda: backend.binding().problem, 30, lambda: f"{backend.binding()}")
            assert not backend.binding().bound
            assert backend.binds == 0
        finally:
            backend.stop()
