"""Push-to-talk through the GlobalShortcuts portal on headless kwin (Plasma 5.27), with
Debian 12's real xdg-desktop-portal and xdg-desktop-portal-kde: the hotkey is bound through
the portal, the keys are pressed through the compositor's own input path (the keyboard the
RemoteDesktop portal lends, which KWin feeds to its global shortcuts like a real one), and
``Activated``/``Deactivated`` start and stop a dictation in hold mode.

GNOME 43 has no GlobalShortcuts portal (it came with GNOME 48). Marker ``wayland``.
Cost: about 15-25 s on 2 cores.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.portal_desktop import PortalDesktop, portal_desktop
from voxtray.choices import HotkeyMode
from voxtray.desktop.consent import ConsentStore
from voxtray.desktop.remote_keyboard import CONTROL_L, RemoteKeyboard
from voxtray.hotkeys.keys import parse_hotkey
from voxtray.hotkeys.modes import PushToTalk
from voxtray.hotkeys.portal_listener import PortalShortcutBackend, shortcuts_problem

pytestmark = pytest.mark.wayland

ALT_L, SPACE = 0xFFE9, 0x20
HOTKEY = "ctrl+alt+space"


@pytest.fixture(scope="module")
def kde() -> Iterator[PortalDesktop]:
    with portal_desktop("KDE") as running:
        yield running


@pytest.fixture(scope="module")
def keyboard(
    kde: PortalDesktop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RemoteKeyboard]:
    keyboard = RemoteKeyboard(kde.env, ConsentStore(tmp_path_factory.mktemp("consent")))
    grant = keyboard.start(timeout=30)
    assert grant.granted, grant.reason
    yield keyboard
    keyboard.close()


class Dictation:
    """What the tray does with the hotkey in hold mode: start on press, stop on release."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []
        self.changed = threading.Condition()
        self.ptt = PushToTalk(
            lambda: self._note("start"), lambda: self._note("stop"), HotkeyMode.HOLD
        )

    def _note(self, what: str) -> None:
        with self.changed:
            self.events.append((what, time.perf_counter()))
            self.changed.notify_all()

    def wait(self, count: int, timeout: float = 5.0) -> list[str]:
        with self.changed:
            self.changed.wait_for(lambda: len(self.events) >= count, timeout)
            return [what for what, _ in self.events]


def _bound(backend: PortalShortcutBackend, binds: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while backend.binds < binds and time.monotonic() < deadline:
        time.sleep(0.05)
    assert backend.binds >= binds, backend.bind_problem


def _hold(
    keyboard: RemoteKeyboard, dictation: Dictation, seconds: float = 0.4
) -> tuple[float, float]:
    """Hold ctrl+alt+space for ``seconds``; how long start and stop took after the key
    went down and up (ms)."""
    before = len(dictation.events)
    for key in (CONTROL_L, ALT_L, SPACE):
        keyboard.press(key, True)
    down = time.perf_counter()
    assert dictation.wait(before + 1)[before:] == ["start"]
    started = dictation.events[before][1] - down
    time.sleep(seconds)
    keyboard.press(SPACE, False)
    up = time.perf_counter()
    for key in (ALT_L, CONTROL_L):
        keyboard.press(key, False)
    assert dictation.wait(before + 2)[before:] == ["start", "stop"]
    stopped = dictation.events[before + 1][1] - up
    return 1000 * started, 1000 * stopped


def _listen(kde: PortalDesktop, dictation: Dictation) -> PortalShortcutBackend:
    backend = PortalShortcutBackend(kde.env, "linux")
    assert backend.available()[0]
    backend.start(parse_hotkey(HOTKEY), dictation.ptt.pressed, dictation.ptt.released)
    return backend


def test_hold_to_talk_through_the_portal(kde: PortalDesktop, keyboard: RemoteKeyboard) -> None:
    assert shortcuts_problem(kde.env) is None
    dictation = Dictation()
    started = time.perf_counter()
    backend = _listen(kde, dictation)
    try:
        _bound(backend, 1)
        bound_ms = 1000 * (time.perf_counter() - started)
        assert backend.bound_trigger == "Ctrl+Alt+Space"
        figures = [_hold(keyboard, dictation) for _ in range(3)]
        assert dictation.wait(6) == ["start", "stop"] * 3
        assert not dictation.ptt.recording
    finally:
        backend.stop()
    print(
        f"\nKDE: shortcut bound in {bound_ms:.0f} ms; key down to start, key up to stop (ms): "
        + ", ".join(f"{down:.1f}/{up:.1f}" for down, up in figures)
    )


def test_the_key_works_again_after_voxtray_restarts(
    kde: PortalDesktop, keyboard: RemoteKeyboard
) -> None:
    """Plasma keeps the key with the shortcut's component, named after the session token:
    a second run (a new process, a new bus connection) gets the key too."""
    for _ in range(2):
        dictation = Dictation()
        backend = _listen(kde, dictation)
        try:
            _bound(backend, 1)
            _hold(keyboard, dictation)
        finally:
            backend.stop()


def test_bound_again_after_the_portal_restarts(
    kde: PortalDesktop, keyboard: RemoteKeyboard, tmp_path: Path
) -> None:
    """The portal's sessions end with it: the shortcut is bound again on its own (the
    test's keyboard, a RemoteDesktop session of the old portal, is started again)."""
    dictation = Dictation()
    backend = _listen(kde, dictation)
    try:
        _bound(backend, 1)
        _hold(keyboard, dictation)
        started = time.perf_counter()
        kde.restart_frontend()
        _bound(backend, 2)
        rebound_ms = 1000 * (time.perf_counter() - started)
        again = RemoteKeyboard(kde.env, ConsentStore(tmp_path))
        assert again.start(timeout=30).granted
        try:
            _hold(again, dictation)
        finally:
            again.close()
        assert dictation.wait(4) == ["start", "stop"] * 2
    finally:
        backend.stop()
    print(f"\nKDE: portal restarted and the shortcut bound again in {rebound_ms:.0f} ms")
