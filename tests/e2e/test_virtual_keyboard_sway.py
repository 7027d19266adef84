"""Keys and chords into a GTK 3 window on real headless sway, as the user's own keymap
gives them (`voxtray.desktop.virtual_keyboard`).

Under wtype's keymap, made of the keys it presses, GTK 3 receives Ctrl+V, Shift+Insert,
BackSpace and the arrows but matches none of its key bindings, which it looks up by the
keycodes of the keymap it started with: a paste, an erase ("scratch that") or a Return did
nothing there, and `auto`, which pastes what would take over 100 ms to type, lost the text.
Here the keys are read back from the window's own buffer. The browsers, as native Wayland
clients, read back what `auto` typed and pasted through their page."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.atspi import GtkTarget
from tests.support.native_targets import BrowserTarget
from tests.support.waiting import wait_for
from tests.support.wayland import (
    WaylandDesktop,
    skip_without_tools,
    wayland_desktop,
)
from voxtray.choices import PasteChord
from voxtray.desktop import virtual_keyboard
from voxtray.output import choose_output
from voxtray.output.typeorpaste import TypeOrPaste
from voxtray.output.wtype import WtypeOutput

pytestmark = pytest.mark.wayland

ACCENTED = "café, naïve, 20 °C, Grüße — ok. "
LONG = ("Dictated text too long to type in a tenth of a second is pasted instead. " * 4)[:300]


@pytest.fixture(scope="module")
def sway() -> Iterator[WaylandDesktop]:
    skip_without_tools()
    with wayland_desktop() as desktop:
        yield desktop


@pytest.fixture
def gtk(sway: WaylandDesktop, tmp_path: Path) -> Iterator[GtkTarget]:
    target = GtkTarget("editable", tmp_path, sway.env())
    try:
        wait_for(lambda: (sway.focused() or {}).get("pid") == target.proc.pid, 10, "no focus")
        yield target
    finally:
        target.close()


def test_keys_and_paste_chords_reach_a_gtk3_window(sway: WaylandDesktop, gtk: GtkTarget) -> None:
    env = sway.env()
    assert virtual_keyboard.offered(env)
    output = WtypeOutput(env)
    output.deliver("one two three")
    assert gtk.wait_for("one two three") == "one two three"
    output.press_key("BackSpace", 6)  # what "scratch that" does to the last words
    assert gtk.wait_for("one two") == "one two"
    output.press_key("Return")
    assert gtk.wait_for("one two\n") == "one two\n"
    sway.set_clipboard(b"pasted ", "text/plain;charset=utf-8")
    output.press_paste(PasteChord.CTRL_V)
    assert gtk.wait_for("one two\npasted ") == "one two\npasted "
    output.press_paste(PasteChord.SHIFT_INSERT)
    assert gtk.wait_for("one two\npasted pasted ") == "one two\npasted pasted "


def test_auto_pastes_a_long_text_into_gtk3_and_types_a_short_one(
    sway: WaylandDesktop, gtk: GtkTarget
) -> None:
    output = choose_output("auto", sway.env())
    assert isinstance(output, TypeOrPaste)  # wtype, and the clipboard past 100 ms of typing
    delivery = output.deliver(ACCENTED)
    assert gtk.wait_for(ACCENTED) == ACCENTED
    assert delivery.complete
    pasted = output.deliver(LONG)
    assert gtk.wait_for(ACCENTED + LONG) == ACCENTED + LONG
    assert pasted.complete
    assert pasted.method == "clipboard", pasted


@pytest.mark.parametrize(
    ("browser", "package"), [("chromium", "chromium"), ("firefox", "firefox-esr")]
)
def test_auto_types_and_pastes_into_a_browser(browser: str, package: str) -> None:
    """Each browser on a sway of its own, opened before anything typed there: with no
    physical keyboard, the seat has no keymap once a virtual keyboard has come and gone,
    and Chromium 1xx then crashes as it starts (SIGSEGV within half a second; measured on
    headless sway 1.7). A desktop with a keyboard always has one."""
    if not shutil.which(package):
        pytest.skip(f"{package} not installed: apt-get install {package}")
    skip_without_tools()
    with wayland_desktop() as desktop:
        target = BrowserTarget(browser, desktop.env())
        try:
            output = choose_output("auto", desktop.env())
            assert isinstance(output, TypeOrPaste)
            output.deliver(ACCENTED)
            wait_for(lambda: target.text() == ACCENTED, 10, f"{browser}: {target.text()!r}")
            pasted = output.deliver(LONG)
            expected = ACCENTED + LONG
            wait_for(lambda: target.text() == expected, 10, f"{browser}: {target.text()!r}")
            assert pasted.method == "clipboard", pasted
        finally:
            target.close()
