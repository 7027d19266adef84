"""The real tray app on GNOME (headless mutter 43) and KDE (headless kwin 5.27) with Debian's
real portals, started as a user starts it (`python -m voxtray`) with default settings after
set-up, fed real speech through a PulseAudio virtual microphone, driven by `voxtray start`
and `stop` (what a desktop shortcut runs) and, on KDE, by holding the hotkey, typing
through the keyboard the desktop lends.
The words are read back by the GTK window they land in, and the history says delivered.
On GNOME the desktop's question is answered through the accessibility bus as a user
answers it; KDE asks none for a keyboard."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.audio import REPO, manifest_clip
from tests.support.portal_desktop import PortalDesktop, approve_gnome_consent, portal_desktop
from tests.support.process import run_voxtray
from tests.support.pulse import VirtualMicrophone, virtual_microphone
from tests.support.recognition import SENTENCE_WER, assert_heard
from tests.support.tray_app import (
    app_status,
    returning_home,
    running_tray_app,
    typed_into_gtk_window,
    wait_for_state,
)
from voxtray.config import Settings
from voxtray.desktop.consent import ConsentStore
from voxtray.desktop.remote_keyboard import CONTROL_L, RemoteKeyboard
from voxtray.history.store import History
from voxtray.models.store import ModelStore

pytestmark = [pytest.mark.slow, pytest.mark.wayland]

SPOKEN = manifest_clip("ljspeech_LJ050-0131")  # about 100 characters: typed and pasted


HOTKEY = (CONTROL_L, 0xFFE9, 0x20)  # ctrl+alt+space, the default hotkey: Control_L, Alt_L, space


@dataclass
class Running:
    desktop: PortalDesktop
    mic: VirtualMicrophone
    env: dict[str, str]
    home: Path


@pytest.fixture(scope="module", params=["GNOME", "KDE"])
def running(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    model_store: ModelStore,
) -> Iterator[Running]:
    name = str(request.param)
    workdir = tmp_path_factory.mktemp(name)
    # The hotkey as it comes (auto): on KDE it is bound through the GlobalShortcuts portal.
    home = returning_home(workdir, model_store, hotkey_backend=Settings().hotkey_backend)
    with virtual_microphone() as mic, portal_desktop(name) as desktop:
        env = {**desktop.env, "VOXTRAY_HOME": str(home)}
        env.update({key: mic.env[key] for key in ("PULSE_SERVER", "PULSE_COOKIE")})
        answering = approve_gnome_consent(desktop.env) if name == "GNOME" else None
        with running_tray_app(env, workdir / "voxtray.log"):
            if answering is not None:
                answering.join(90)
            yield Running(desktop, mic, env, home)


@contextlib.contextmanager
def _started_and_stopped(env: dict[str, str]) -> Iterator[None]:
    """`voxtray start` on entering, `voxtray stop` on leaving: what a desktop shortcut runs."""
    started = run_voxtray("start", env=env, timeout=30, cwd=REPO)
    assert started.returncode == 0, started.stderr
    yield
    stopped = run_voxtray("stop", env=env, timeout=30, cwd=REPO)
    assert stopped.returncode == 0, stopped.stderr


@contextlib.contextmanager
def _held(keys: RemoteKeyboard, hotkey: tuple[int, ...]) -> Iterator[None]:
    """`hotkey` held down on the desktop's keyboard while the block runs."""
    for key in hotkey:
        keys.press(key, True)
    try:
        yield
    finally:
        for key in reversed(hotkey):
            keys.press(key, False)


def test_the_tray_app_types_dictated_speech_through_the_desktops_keyboard(
    running: Running, tmp_path: Path
) -> None:
    status = app_status(running.env)
    assert status["output"]["method"] == "portal", status
    typed = typed_into_gtk_window(
        running.env, running.desktop.env, tmp_path,
        lambda: _started_and_stopped(running.env), (running.mic, SPOKEN.path),
    )  # fmt: skip
    assert_heard(SPOKEN.reference, typed, SENTENCE_WER)
    wait_for_state(running.env, "ready", 30)
    last = History(running.home / "history.sqlite3").recent(1)[0]
    assert last.text.strip() == typed.strip()
    assert last.delivered
    print(f"\n{running.desktop.name}: {len(typed)} characters typed by the tray app: {typed!r}")


def test_holding_the_hotkey_on_kde_dictates_through_the_shortcuts_portal(
    running: Running, tmp_path: Path
) -> None:
    """Push-to-talk in the real app: Plasma binds ctrl+alt+space for it through the
    GlobalShortcuts portal; the key goes down and up through the compositor's own input
    path (the keyboard the RemoteDesktop portal lends, which KWin feeds to its global
    shortcuts like a physical one), with the speech played while it is held."""
    if running.desktop.name != "KDE":
        pytest.skip("GNOME 43 has no GlobalShortcuts portal (it came with GNOME 48)")
    keys = RemoteKeyboard(running.desktop.env, ConsentStore(tmp_path / "consent"))
    assert keys.start(timeout=30).granted
    try:
        typed = typed_into_gtk_window(
            running.env, running.desktop.env, tmp_path,
            lambda: _held(keys, HOTKEY), (running.mic, SPOKEN.path),
        )  # fmt: skip
    finally:
        keys.close()
    assert_heard(SPOKEN.reference, typed, SENTENCE_WER)
    wait_for_state(running.env, "ready", 30)
    assert History(running.home / "history.sqlite3").recent(1)[0].delivered
