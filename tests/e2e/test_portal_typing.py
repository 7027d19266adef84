"""Typing through the RemoteDesktop portal on headless mutter (GNOME 43) and kwin (Plasma
5.27), with Debian 12's real xdg-desktop-portal, into native Wayland clients that read back
what reached them: a GTK3 window, the Qt window without accessibility, foot running
``cat``, and Chromium with ``--ozone-platform=wayland``.

One desktop per module parameter, shared by its tests (start-up: about 3 s for the
compositor and portals; Chromium about 5-10 s on 2 busy cores). Marker ``wayland``.
Cost: about 60-90 s for both desktops on 2 cores.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.atspi import GtkTarget
from tests.support.native_targets import BrowserTarget, TerminalTarget, wait_for
from tests.support.portal_desktop import (
    PortalDesktop,
    approve_gnome_consent,
    portal_desktop,
    which,
)
from tests.support.x11 import TargetWindow
from voxtray.desktop.consent import Consent, ConsentStore
from voxtray.desktop.remote_keyboard import RemoteKeyboard, typable
from voxtray.output.base import DeliveryError
from voxtray.output.chooser import choose_output
from voxtray.output.portal_keys import PortalKeysOutput

pytestmark = pytest.mark.wayland

ACCENTED = "café, naïve, 20 °C, Grüße — ok"
PLAIN = "Hello from Voxtray, typed key by key."
LONG = "The quick brown fox jumps over the lazy dog while 42 people watch it happen."


@pytest.fixture(scope="module", params=["GNOME", "KDE"])
def desktop(request: pytest.FixtureRequest) -> Iterator[PortalDesktop]:
    with portal_desktop(request.param) as running:
        yield running


@pytest.fixture(scope="module")
def output(
    desktop: PortalDesktop, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PortalKeysOutput]:
    store = ConsentStore(tmp_path_factory.mktemp("consent"))
    keyboard = RemoteKeyboard(desktop.env, store)
    output = PortalKeysOutput(desktop.env, "linux", keyboard=keyboard)
    if desktop.name == "GNOME":
        approve_gnome_consent(desktop.env)
    grant = keyboard.start(timeout=90)
    assert grant.granted, grant.reason
    assert store.load().state is Consent.GRANTED
    print(f"\n{desktop.name}: portal session started in {grant.seconds * 1000:.0f} ms")
    yield output
    output.close()


def test_auto_picks_the_portal(desktop: PortalDesktop) -> None:
    chosen = choose_output("auto", desktop.env, platform="linux")
    assert isinstance(chosen, PortalKeysOutput)
    assert chosen.problem() is None


def _deliver_all(output: PortalKeysOutput, read: object, name: str) -> None:
    expected = ""
    for text in (PLAIN, " " + ACCENTED, " " + LONG):
        started = time.perf_counter()
        try:
            delivery = output.deliver(text)
        except DeliveryError as exc:
            if name.startswith("KDE") and not typable(text):
                pytest.xfail(f"pasting on headless kwin 5.27: {exc}")
            raise
        expected += text
        got = wait_for(read, expected)
        shown_ms = 1000 * (time.perf_counter() - started)
        print(f"{name}: {len(text)} characters -> {shown_ms:.0f} ms")
        assert delivery.typed_text == text
        assert got == expected, f"{name} got {got!r}"


def test_gtk_window(output: PortalKeysOutput, desktop: PortalDesktop, tmp_path: Path) -> None:
    target = GtkTarget("editable", tmp_path, desktop.env)
    try:
        time.sleep(0.5)
        _deliver_all(output, target.text, f"{desktop.name} GTK")
    finally:
        target.close()


def test_qt_window_without_accessibility(
    output: PortalKeysOutput, desktop: PortalDesktop, tmp_path: Path
) -> None:
    env = {**desktop.env, "QT_QPA_PLATFORM": "wayland"}
    target = TargetWindow("", tmp_path, env=env)
    try:
        time.sleep(0.5)
        _deliver_all(output, target.text, f"{desktop.name} Qt")
    finally:
        target.proc.terminate()
        target.proc.wait(10)


def test_terminal_gets_text_and_never_ctrl_v(
    output: PortalKeysOutput, desktop: PortalDesktop, tmp_path: Path
) -> None:
    if not which("foot"):
        pytest.skip("foot not installed: apt-get install foot")
    try:
        target = TerminalTarget(desktop.env, tmp_path)
    except RuntimeError as exc:
        if desktop.name == "KDE":
            pytest.xfail(f"foot on headless kwin 5.27: {exc}")
        raise
    try:
        output.deliver(PLAIN)
        assert wait_for(target.text, PLAIN) == PLAIN
        output.deliver(" " + LONG)
        assert wait_for(target.text, PLAIN + " " + LONG) == PLAIN + " " + LONG
        output.deliver(" " + ACCENTED)  # pasted with shift+Insert: the primary selection
        got = wait_for(target.text, PLAIN + " " + LONG + " " + ACCENTED)
        assert "\x16" not in got  # never ctrl+v, which a terminal takes as a byte
        if desktop.name == "KDE" and not got.endswith(ACCENTED):
            pytest.xfail("kwin 5.27 gives wl-copy no primary selection: accents in terminals")
        assert got.endswith(ACCENTED)
    finally:
        target.close()


def test_chromium_native_wayland(output: PortalKeysOutput, desktop: PortalDesktop) -> None:
    if not which("chromium"):
        pytest.skip("chromium not installed: apt-get install chromium")
    target = BrowserTarget("chromium", desktop.env)
    try:
        _deliver_all(output, target.text, f"{desktop.name} Chromium")
    finally:
        target.close()
