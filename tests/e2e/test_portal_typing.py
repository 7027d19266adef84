"""Typing through the RemoteDesktop portal on headless mutter (GNOME 43) and kwin (Plasma
5.27), with Debian 12's real xdg-desktop-portal, into native Wayland clients that read back
what reached them: a GTK3 window, the Qt window without accessibility, foot running
``cat``, Chromium with ``--ozone-platform=wayland`` and Firefox ESR with
``MOZ_ENABLE_WAYLAND=1`` (each page posts its textarea's value to a local server).

One desktop per module parameter, shared by its tests (start-up: about 3 s for the
compositor and portals; Chromium about 5-10 s on 2 busy cores). Marker ``wayland``.
Cost: about 60-90 s for both desktops on 2 cores.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.atspi import GtkTarget
from tests.support.native_targets import BrowserTarget, TerminalTarget
from tests.support.portal_desktop import (
    PortalDesktop,
    approve_gnome_consent,
    end_remote_control,
    portal_desktop,
    refuse_gnome_consent,
    which,
)
from tests.support.waiting import wait_for_text
from tests.support.x11 import TargetWindow
from voxtray.desktop import data_control
from voxtray.desktop.consent import Consent, ConsentStore
from voxtray.desktop.remote_keyboard import RemoteKeyboard
from voxtray.desktop.session import DesktopSession
from voxtray.output.chooser import choose_output
from voxtray.output.portal_keys import PRIMARY_TYPES, PortalKeysOutput
from voxtray.output.selection import Clipboard
from voxtray.output.tools import ConsentNeeded

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


def _deliver_all(output: PortalKeysOutput, read: Callable[[], str], name: str) -> None:
    expected = ""
    for text in (PLAIN, " " + ACCENTED, " " + LONG):
        started = time.perf_counter()
        delivery = output.deliver(text)
        expected += text
        got = wait_for_text(read, expected)
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
    """foot on GNOME, Konsole (KDE's own terminal) on KDE."""
    terminal = "konsole" if desktop.name == "KDE" else "foot"
    if not which(terminal):
        pytest.skip(f"{terminal} not installed: apt-get install {terminal}")
    target = TerminalTarget(desktop.env, tmp_path, terminal)
    try:
        output.deliver(PLAIN)
        assert wait_for_text(target.text, PLAIN) == PLAIN
        output.deliver(" " + LONG)
        assert wait_for_text(target.text, PLAIN + " " + LONG) == PLAIN + " " + LONG
        output.deliver(" " + ACCENTED)  # pasted with shift+Insert: the primary selection
        got = wait_for_text(target.text, PLAIN + " " + LONG + " " + ACCENTED)
        assert "\x16" not in got  # never ctrl+v, which a terminal takes as a byte
        assert got.endswith(ACCENTED)
    finally:
        target.close()


@pytest.mark.parametrize(
    ("browser", "package"), [("chromium", "chromium"), ("firefox", "firefox-esr")]
)
def test_browser_native_wayland(
    output: PortalKeysOutput, desktop: PortalDesktop, browser: str, package: str
) -> None:
    if not which(package):
        pytest.skip(f"{package} not installed: apt-get install {package}")
    target = BrowserTarget(browser, desktop.env)
    try:
        _deliver_all(output, target.text, f"{desktop.name} {browser.capitalize()}")
    finally:
        target.close()


def test_selections_through_data_control(desktop: PortalDesktop) -> None:
    """KWin tells a data-control client nothing about an empty clipboard, where wl-paste
    waits for ever: the compositor's own answer says it is empty, and the primary selection,
    which wl-copy cannot own on KWin, is owned and given up again. mutter has no
    data-control: the tools are used there."""
    held = data_control.selections(desktop.env)
    if desktop.name == "GNOME":
        assert held is None
        return
    assert held is not None
    assert held.tells_primary
    offer = data_control.PrimaryOffer(desktop.env, PRIMARY_TYPES)
    started = time.perf_counter()
    assert offer.start(ACCENTED)
    owned_ms = 1000 * (time.perf_counter() - started)
    print(f"\n{desktop.name}: primary selection owned in {owned_ms:.1f} ms")
    try:
        during = data_control.selections(desktop.env)
        assert during is not None
        assert during.primary is not None
        assert set(PRIMARY_TYPES) <= set(during.primary)
    finally:
        offer.stop()
    after = data_control.selections(desktop.env)
    assert after is not None
    assert after.empty(primary=True)


def test_refused_consent_leaves_text_on_clipboard(
    output: PortalKeysOutput, desktop: PortalDesktop, tmp_path: Path
) -> None:
    """The user presses Cancel on the desktop's question: the text is on the clipboard, the
    line says how to be asked again, and the next dictation does not ask (nor wait)."""
    if desktop.name != "GNOME":
        pytest.skip("Plasma 5.27 lends a keyboard without a question: there is nothing to refuse")
    store = ConsentStore(tmp_path)
    refused = PortalKeysOutput(desktop.env, "linux", keyboard=RemoteKeyboard(desktop.env, store))
    answering = refuse_gnome_consent(desktop.env)
    clipboard = Clipboard(DesktopSession.from_env(desktop.env, "linux"), refused.tool_env())
    try:
        started = time.perf_counter()
        with pytest.raises(ConsentNeeded, match=r"permission.*clipboard"):
            refused.deliver(ACCENTED)
        first_ms = 1000 * (time.perf_counter() - started)
        answering.join(30)
        assert answering.refused  # type: ignore[attr-defined]
        assert store.load().state is Consent.DENIED
        assert not refused.keyboard.active
        assert clipboard.text() == ACCENTED
        started = time.perf_counter()
        with pytest.raises(ConsentNeeded, match="it was refused"):
            refused.deliver(PLAIN)
        again_ms = 1000 * (time.perf_counter() - started)
        assert clipboard.text() == PLAIN
        assert not refused.keyboard.active
        print(
            f"\n{desktop.name}: refused on the question: {first_ms:.0f} ms to the clipboard; "
            f"next dictation {again_ms:.0f} ms, not asked"
        )
        assert again_ms < 3000
    finally:
        refused.close()


def test_withdrawn_consent_leaves_text_on_clipboard(
    output: PortalKeysOutput, desktop: PortalDesktop, tmp_path: Path
) -> None:
    """The desktop ends remote control while Voxtray holds the keyboard (its backend closes
    the session, as its "stop" does): the consent reads withdrawn, the next text is left on
    the clipboard with the line, and nothing asks again."""
    if desktop.name == "GNOME":
        pytest.skip(
            "GNOME ends remote control from the shell's indicator, absent here, and "
            "xdg-desktop-portal-gnome 43 does not report a session closed at the backend"
        )
    store = ConsentStore(tmp_path)
    keyboard = RemoteKeyboard(desktop.env, store)
    withdrawn = PortalKeysOutput(desktop.env, "linux", keyboard=keyboard)
    clipboard = Clipboard(DesktopSession.from_env(desktop.env, "linux"), withdrawn.tool_env())
    try:
        assert keyboard.start(timeout=30).granted
        session = keyboard.session
        assert session is not None
        started = time.perf_counter()
        end_remote_control(desktop.env, desktop.name, session)
        deadline = time.monotonic() + 5
        while store.load().state is not Consent.REVOKED and time.monotonic() < deadline:
            time.sleep(0.01)
        heard_ms = 1000 * (time.perf_counter() - started)
        assert store.load().state is Consent.REVOKED
        assert not keyboard.active
        started = time.perf_counter()
        with pytest.raises(ConsentNeeded, match=r"it was withdrawn.*clipboard"):
            withdrawn.deliver(PLAIN)
        spilled_ms = 1000 * (time.perf_counter() - started)
        assert clipboard.text() == PLAIN
        assert not keyboard.active
        print(
            f"\n{desktop.name}: withdrawal heard in {heard_ms:.0f} ms; "
            f"next text on the clipboard with the notice in {spilled_ms:.0f} ms, not asked"
        )
    finally:
        withdrawn.close()


def test_typing_goes_on_after_the_portal_restarts(
    output: PortalKeysOutput, desktop: PortalDesktop, tmp_path: Path
) -> None:
    """The portal frontend restarts (a crash, an upgrade): its sessions are gone with it. The
    next text is typed all the same, on a session started again, and the consent is not
    taken for withdrawn. GNOME's portal 1.16 asks again, as at every start of it (the test
    answers); Plasma asks nothing. Last in the module: the desktop's portal is new."""
    target = GtkTarget("editable", tmp_path, desktop.env)
    try:
        time.sleep(0.5)
        output.deliver(PLAIN)
        assert wait_for_text(target.text, PLAIN) == PLAIN
        old_session = output.keyboard.session
        desktop.restart_frontend()
        if desktop.name == "GNOME":
            approve_gnome_consent(desktop.env)
        started = time.perf_counter()
        delivery = output.deliver(" " + LONG)
        typed_ms = 1000 * (time.perf_counter() - started)
        assert delivery.typed_text == " " + LONG
        assert wait_for_text(target.text, PLAIN + " " + LONG) == PLAIN + " " + LONG
        assert output.consent() is Consent.GRANTED
        assert output.keyboard.session not in (None, old_session)
        print(f"\n{desktop.name}: typed again {typed_ms:.0f} ms after the portal restarted")
    finally:
        target.close()


class _SignalLate(RemoteKeyboard):
    """A keyboard that has not yet heard the portal's restart when the next text comes."""

    def _portal_changed(self, message: object) -> None:
        pass


def test_a_text_sent_before_the_restart_is_heard_is_typed(
    desktop: PortalDesktop, tmp_path: Path
) -> None:
    """The portal refuses the old session at the first key ("Invalid session"): nothing went
    through, so the session is started again and the whole text typed on it, once."""
    keyboard = _SignalLate(desktop.env, ConsentStore(tmp_path))
    late = PortalKeysOutput(desktop.env, "linux", keyboard=keyboard)
    target = GtkTarget("editable", tmp_path, desktop.env)
    try:
        if desktop.name == "GNOME":
            approve_gnome_consent(desktop.env)
        assert keyboard.start(timeout=90).granted
        desktop.restart_frontend()
        if desktop.name == "GNOME":
            approve_gnome_consent(desktop.env)
        time.sleep(0.5)
        late.deliver(PLAIN)
        assert wait_for_text(target.text, PLAIN) == PLAIN
        assert late.consent() is Consent.GRANTED
    finally:
        target.close()
        late.close()
