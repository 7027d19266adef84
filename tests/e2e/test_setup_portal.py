"""The set-up window's desktop step on headless mutter (GNOME 43) and kwin (Plasma 5.27)
with Debian 12's real portals: it says what the desktop's question is for, asks it when the
user presses Allow typing (Alt+A), shows the answer, and says how the hotkey works there
(Plasma binds push-to-talk through its GlobalShortcuts portal; GNOME 43 has none, and the
step says so and what to do instead). The window is used by keyboard; its labels are read
as a screen reader reads them, by their accessible names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.support.portal_desktop import (
    PortalDesktop,
    approve_gnome_consent,
    portal_desktop,
    refuse_gnome_consent,
)
from voxtray.desktop.consent import WHY_ASK, Consent, ConsentStore
from voxtray.desktop.remote_keyboard import RemoteKeyboard
from voxtray.desktop.session import DesktopSession
from voxtray.hotkeys.chooser import choose_backend
from voxtray.hotkeys.portal_listener import shortcuts_problem
from voxtray.output.portal_keys import PortalKeysOutput
from voxtray.ui.setup_desktop import (
    BY_NAME_ONLY,
    CONSENT_WORDS,
    PUSH_TO_TALK,
    DesktopStep,
    PortalTyping,
    needs_step,
    shortcut_problem,
)

pytestmark = pytest.mark.wayland


@pytest.fixture(scope="module", params=["GNOME", "KDE"])
def desktop(request: pytest.FixtureRequest) -> Iterator[PortalDesktop]:
    with portal_desktop(request.param) as running:
        yield running


def _step(qtbot: Any, desktop: PortalDesktop, store: ConsentStore) -> DesktopStep:
    def make() -> PortalKeysOutput:
        keyboard = RemoteKeyboard(desktop.env, store)
        return PortalKeysOutput(desktop.env, "linux", keyboard=keyboard)

    typing = PortalTyping(make=make)
    step = DesktopStep(typing, lambda: shortcut_problem(desktop.env))
    qtbot.addWidget(step)
    step.show()
    qtbot.waitUntil(lambda: bool(step.consent.text()) and bool(step.hotkey.text()), timeout=20000)
    return step


def _press_alt_a(qtbot: Any, step: DesktopStep) -> None:
    step.activateWindow()
    qtbot.keyClick(step, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)


def test_the_step_asks_once_and_shows_the_answer(
    qtbot: Any, desktop: PortalDesktop, tmp_path: Path
) -> None:
    assert needs_step(DesktopSession.from_env(desktop.env, "linux"))
    store = ConsentStore(tmp_path)
    step = _step(qtbot, desktop, store)
    names = {label.accessibleName(): label.text() for label in (step.consent, step.hotkey)}
    assert names["Typing permission"] == CONSENT_WORDS[Consent.UNASKED]
    assert step.findChildren(type(step.consent))[0].text() == WHY_ASK
    assert step.allow.isEnabled()
    if desktop.name == "GNOME":
        answering = approve_gnome_consent(desktop.env)
        assert "GlobalShortcuts" in names["Push-to-talk"]
        assert "tap" in names["Push-to-talk"]
    else:
        assert names["Push-to-talk"] == PUSH_TO_TALK
    _press_alt_a(qtbot, step)
    qtbot.waitUntil(lambda: step.consent.text() == CONSENT_WORDS[Consent.GRANTED], timeout=90000)
    if desktop.name == "GNOME":
        answering.join(30)
    assert store.load().state is Consent.GRANTED
    assert not step.allow.isEnabled()  # granted: nothing left to ask
    step.typing.close()


def test_a_refusal_is_shown_and_can_be_asked_again(
    qtbot: Any, desktop: PortalDesktop, tmp_path: Path
) -> None:
    if desktop.name != "GNOME":
        pytest.skip("Plasma 5.27 lends a keyboard without a question: there is nothing to refuse")
    store = ConsentStore(tmp_path)
    step = _step(qtbot, desktop, store)
    answering = refuse_gnome_consent(desktop.env)
    _press_alt_a(qtbot, step)
    qtbot.waitUntil(lambda: step.consent.text().startswith("Not allowed"), timeout=90000)
    answering.join(30)
    assert answering.refused  # type: ignore[attr-defined]
    assert CONSENT_WORDS[Consent.DENIED] in step.consent.text()
    assert store.load().state is Consent.DENIED
    assert step.allow.isEnabled()
    assert step.allow.hasFocus()  # the next key press asks again
    answering = approve_gnome_consent(desktop.env)
    qtbot.keyClick(step.allow, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: step.consent.text() == CONSENT_WORDS[Consent.GRANTED], timeout=90000)
    answering.join(30)
    assert store.load().state is Consent.GRANTED
    step.typing.close()


def test_the_shortcut_portal_is_push_to_talk_where_auto_binds_it(
    desktop: PortalDesktop, tmp_path: Path
) -> None:
    """Where a desktop's backend has GlobalShortcuts, the step promises push-to-talk on GNOME
    (48, where Voxtray registers its app ID) and KDE, whose keys `auto` binds through it; on
    Hyprland, whose compositor must bind the key too, it says the portal is chosen by name.
    Backend files stand in for GNOME 48's and Hyprland's here; the real GNOME 48 binding is
    `tests/e2e/test_gnome48_shortcuts.py`."""
    if desktop.name != "GNOME":
        pytest.skip("Plasma's own backend has the portal: the GNOME half stands one in")
    for name, use_in in (("gnome", "gnome"), ("hyprland", "hyprland")):
        (tmp_path / f"{name}.portal").write_text(
            f"[portal]\nDBusName=org.freedesktop.impl.portal.desktop.{name}\n"
            "Interfaces=org.freedesktop.impl.portal.RemoteDesktop;"
            f"org.freedesktop.impl.portal.GlobalShortcuts;\nUseIn={use_in}\n",
            encoding="utf-8",
        )
    env = {**desktop.env, "XDG_DESKTOP_PORTAL_DIR": str(tmp_path)}
    assert shortcuts_problem(env) is None  # listed by the portal, and GNOME's backend has it
    assert shortcut_problem(env) is None
    assert choose_backend("auto", env).name == "portal"
    hyprland = {**env, "XDG_CURRENT_DESKTOP": "Hyprland"}
    assert shortcuts_problem(hyprland) is None
    assert shortcut_problem(hyprland) == BY_NAME_ONLY
    assert choose_backend("auto", hyprland).name != "portal"
