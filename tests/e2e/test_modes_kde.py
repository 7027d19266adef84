"""Modes where the compositor does not say which app has the focus (KDE Plasma on Wayland,
headless kwin with the real portal): the accessibility bus's name of the focused application
picks the mode. The Qt-free core dictates a real clip with the real model and the output
`auto` takes there (the portal's keyboard) into a GTK window that reads back what it got."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.atspi import GtkTarget
from tests.support.modes_rig import Window, assert_arrived, dictate_into
from tests.support.portal_desktop import PortalDesktop, portal_desktop
from voxtray.config import Settings
from voxtray.history.store import History
from voxtray.models.store import ModelStore
from voxtray.modes import DEFAULT_MODES

pytestmark = pytest.mark.wayland

GTK_APP = "atspi.py"
"""The GTK target's application name on the accessibility bus (its program's name)."""


@pytest.fixture
def kde(monkeypatch: pytest.MonkeyPatch) -> Iterator[PortalDesktop]:
    with portal_desktop("KDE") as desktop:
        for key, value in desktop.env.items():  # Voxtray as the session starts it
            monkeypatch.setenv(key, value)
        for key in ("DISPLAY", "QT_QPA_PLATFORM"):
            monkeypatch.delenv(key, raising=False)
        yield desktop


def test_the_focused_apps_name_on_the_accessibility_bus_picks_the_mode(
    kde: PortalDesktop, tmp_path: Path, model_store: ModelStore
) -> None:
    gtk = GtkTarget("editable", tmp_path, kde.env)
    notes = f"notes: app={GTK_APP} capitals=off period=off\n"
    try:
        with History(tmp_path / "history.sqlite3") as history:
            settings = Settings(modes=DEFAULT_MODES + notes)
            got, warnings = dictate_into(
                model_store, history, settings, [Window("gtk", lambda: None, gtk.text)]
            )
    finally:
        gtk.close()
    print({name: arrived.text for name, arrived in got.items()}, warnings)
    assert_arrived(got["gtk"], "notes", capital=False, stop=False)
