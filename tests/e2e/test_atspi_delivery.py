"""Delivery that reads the field back, for real, under the accessibility bus.

A private session bus and the accessibility bus on it (tests/support/atspi.py), real
targets: the Qt text window with ``QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1``, GTK3 windows (an
editable text view, one that drops every insertion, a read-only one, a button) and
``zenity --text-info --editable``; on Xvfb, and on headless kwin_wayland and mutter, where
no keystroke tool types and the text must land by `atspi`.

``VOXTRAY_ATSPI_FIGURES=1`` prints the figures of docs/benchmarks.md (``-s`` to see them).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import atspi as support
from tests.support import x11
from tests.support.waiting import wait_for
from tests.support.wayland import other_compositor
from voxtray.choices import OutputMethod
from voxtray.desktop.atspi import Accessibility
from voxtray.output import choose_output
from voxtray.output.atspi import AtspiOutput
from voxtray.output.verify import FieldCheck, Outcome
from voxtray.output.xdotool import XdotoolOutput

pytestmark = pytest.mark.skipif(
    bool(x11.missing_tools() or support.missing()),
    reason=support.missing() or f"needs {', '.join(x11.missing_tools())}",
)

HUNDRED = ("Dictated text lands where the caret is, and Voxtray reads it back. " * 2)[:100]
FIGURES = os.environ.get("VOXTRAY_ATSPI_FIGURES") == "1"


@pytest.fixture(scope="module")
def bus_env() -> Iterator[dict[str, str]]:
    with support.x_display_with_bus() as env:
        yield env


def focused_check(env: dict[str, str], notify: Callable[[str], None] | None = None) -> FieldCheck:
    check = FieldCheck(env, notify)
    wait_for(lambda: check.capture().widget is not None, 10, "no focused widget on the bus")
    return check


def test_typed_into_qt_is_verified(bus_env: dict[str, str], tmp_path: Path) -> None:
    window = x11.TargetWindow(bus_env["DISPLAY"], tmp_path, support.qt_env(bus_env))
    try:
        window.focus()
        check = focused_check(bus_env)
        found = check.capture()
        assert found.widget is not None
        assert found.widget.editable
        XdotoolOutput(bus_env).deliver("hello from Qt")
        result = check.verify(found, "hello from Qt")
        assert result.outcome is Outcome.VERIFIED
        assert window.wait_for("hello from Qt") == "hello from Qt"
    finally:
        window.close()


def test_typed_into_gtk_is_verified(bus_env: dict[str, str], tmp_path: Path) -> None:
    target = support.GtkTarget("editable", tmp_path, bus_env)
    try:
        x11.xdotool(bus_env["DISPLAY"], "windowfocus", "--sync", target.window)
        check = focused_check(bus_env)
        found = check.capture()
        XdotoolOutput(bus_env).deliver("hello from GTK")
        assert check.verify(found, "hello from GTK").outcome is Outcome.VERIFIED
        assert target.wait_for("hello from GTK") == "hello from GTK"
    finally:
        target.close()


def test_inserted_into_zenity_without_keys(bus_env: dict[str, str], tmp_path: Path) -> None:
    if shutil.which("zenity") is None:
        pytest.skip("zenity not installed: apt-get install zenity")
    zenity = subprocess.Popen(
        ["zenity", "--text-info", "--editable", "--title", "voxtray-zenity"],
        env=bus_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        check = focused_check(bus_env)
        found = check.capture()
        assert found.widget is not None
        assert found.widget.insertable
        delivery = AtspiOutput(bus_env).deliver("zenity got it")
        assert delivery.complete
        assert check.verify(found, "zenity got it").outcome is Outcome.VERIFIED
        assert check.accessibility.text(found.widget.ref) == "zenity got it"
    finally:
        zenity.terminate()
        zenity.wait(5)


def test_a_field_that_drops_the_text_is_missing_and_the_clipboard_has_it(
    bus_env: dict[str, str], tmp_path: Path
) -> None:
    target = support.GtkTarget("ignoring", tmp_path, bus_env)
    try:
        x11.xdotool(bus_env["DISPLAY"], "windowfocus", "--sync", target.window)
        notices: list[str] = []
        check = focused_check(bus_env, notices.append)
        found = check.capture()
        assert found.widget is not None
        assert found.widget.editable  # it says so, and drops what arrives
        XdotoolOutput(bus_env).deliver("lost words")
        result = check.verify(found, "lost words", timeout=0.5)
        assert result.outcome is Outcome.MISSING
        assert result.notice is not None
        assert "on the clipboard" in result.notice
        assert target.text() == ""
        assert x11.xclip_get(bus_env["DISPLAY"]) == b"lost words"
    finally:
        target.close()


@pytest.mark.parametrize("kind", ["button", "readonly"])
def test_no_keys_for_a_focus_that_takes_no_text(
    bus_env: dict[str, str], tmp_path: Path, kind: str
) -> None:
    target = support.GtkTarget(kind, tmp_path, bus_env)
    try:
        x11.xdotool(bus_env["DISPLAY"], "windowfocus", "--sync", target.window)
        notices: list[str] = []
        check = focused_check(bus_env, notices.append)
        found = check.capture()
        assert found.not_text
        refused = check.refuse(found, "not for a button", "xdotool")
        assert refused is not None
        assert refused.typed_text == ""
        assert "not a text field" in (refused.reason or "")
        assert x11.xclip_get(bus_env["DISPLAY"]) == b"not for a button"
        assert len(notices) == 1
        assert target.text() == ("read only" if kind == "readonly" else "")
    finally:
        target.close()


def test_without_the_bus_voxtray_types_as_before(tmp_path: Path) -> None:
    with x11.x11_session() as display:
        env = x11.x_env(display)
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        window = x11.TargetWindow(display, tmp_path, support.qt_env(env))
        try:
            window.focus()
            check = FieldCheck(env)
            found = check.capture()
            assert found.widget is None
            assert found.reason is not None
            assert "no session bus" in found.reason
            assert check.refuse(found, "typed anyway", "xdotool") is None
            XdotoolOutput(env).deliver("typed anyway")
            assert window.wait_for("typed anyway") == "typed anyway"
            assert check.verify(found, "typed anyway").outcome is Outcome.UNVERIFIED
        finally:
            window.close()


def test_atspi_output_moves_the_caret_like_typing(bus_env: dict[str, str], tmp_path: Path) -> None:
    window = x11.TargetWindow(bus_env["DISPLAY"], tmp_path, support.qt_env(bus_env))
    try:
        window.focus()
        focused_check(bus_env)
        output = AtspiOutput(bus_env)
        output.deliver("one ")
        output.deliver("twö 🎉 ")
        output.deliver("three")
        assert window.wait_for("one twö 🎉 three") == "one twö 🎉 three"
        output.press_key("BackSpace", 5)
        assert window.wait_for("one twö 🎉 ") == "one twö 🎉 "
    finally:
        window.close()


def test_undo_takes_inserted_text_back_as_typed_text(
    bus_env: dict[str, str], tmp_path: Path
) -> None:
    display = bus_env["DISPLAY"]
    window = x11.TargetWindow(display, tmp_path, support.qt_env(bus_env))
    try:
        window.focus()
        focused_check(bus_env)
        for output in (AtspiOutput(bus_env), XdotoolOutput(bus_env)):
            output.deliver("undo takes this back")
            assert window.wait_for("undo takes this back") == "undo takes this back"
            x11.xdotool(display, "key", "ctrl+z")
            assert window.wait_for("") == "", f"{output.name}: one Ctrl+Z"
    finally:
        window.close()


def _gtk_on(desktop_env: dict[str, str], tmp_path: Path, name: str) -> None:
    with support.a11y_bus(desktop_env) as env:
        env["GDK_BACKEND"] = "wayland"
        target = support.GtkTarget("editable", tmp_path, env)
        try:
            check = focused_check(env)
            # auto takes the portal's keyboard first where the desktop lends one (KDE):
            # insertion stays available by name, and is auto's pick where nothing types.
            output = choose_output(env=env)
            if output.name is not OutputMethod.ATSPI:
                assert output.name is OutputMethod.PORTAL, f"{name}: auto chose {output}"
                output = choose_output(OutputMethod.ATSPI, env=env)
            found = check.capture()
            delivery = output.deliver(f"typed on {name}")
            assert delivery.complete
            assert check.verify(found, f"typed on {name}").outcome is Outcome.VERIFIED
            assert target.wait_for(f"typed on {name}") == f"typed on {name}"
            if FIGURES:
                _figures(name, env, output, check, target)
        finally:
            target.close()


def test_kwin_wayland_gets_text_by_atspi(tmp_path: Path) -> None:
    with other_compositor("KDE") as desktop:
        _gtk_on(desktop.env(), tmp_path, "KDE")


def test_kwin_field_that_drops_inserted_text_is_missing(tmp_path: Path) -> None:
    with other_compositor("KDE") as desktop, support.a11y_bus(desktop.env()) as env:
        env["GDK_BACKEND"] = "wayland"
        target = support.GtkTarget("ignoring", tmp_path, env)
        try:
            check = focused_check(env)
            found = check.capture()
            delivery = choose_output(OutputMethod.ATSPI, env=env).deliver("dropped on KDE")
            assert delivery.method == "atspi"
            result = check.verify(found, "dropped on KDE", timeout=0.5)
            assert result.outcome is Outcome.MISSING
            assert target.text() == ""
            assert desktop.clipboard() == b"dropped on KDE"
        finally:
            target.close()


def test_mutter_gets_text_by_atspi(tmp_path: Path) -> None:
    with other_compositor("GNOME") as desktop:
        env = desktop.env()
        with support.mutter_keyboard(env):
            _gtk_on(env, tmp_path, "GNOME")


def _figures(
    name: str, env: dict[str, str], output: object, check: FieldCheck, target: object
) -> None:
    """Median over 20 runs: 100 characters inserted, then read back until they are there."""
    assert isinstance(output, AtspiOutput)
    inserts, verifies, focus = [], [], []
    for _ in range(20):
        started = time.perf_counter()
        found = check.capture()
        focus.append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        output.deliver(HUNDRED)
        inserts.append(1000 * (time.perf_counter() - started))
        result = check.verify(found, HUNDRED)
        assert result.outcome is Outcome.VERIFIED
        verifies.append(result.elapsed_ms)
    print(
        f"\nFIGURES {name} atspi: insert 100 chars {statistics.median(inserts):.1f} ms, "
        f"verify {statistics.median(verifies):.1f} ms, focus look-up "
        f"{statistics.median(focus):.1f} ms"
    )


@pytest.mark.skipif(not FIGURES, reason="figures only with VOXTRAY_ATSPI_FIGURES=1")
@pytest.mark.parametrize("toolkit", ["Qt", "GTK"])
def test_x11_figures(bus_env: dict[str, str], tmp_path: Path, toolkit: str) -> None:
    display = bus_env["DISPLAY"]
    if toolkit == "Qt":
        qt = x11.TargetWindow(display, tmp_path, support.qt_env(bus_env))
        qt.focus()
        close = qt.close
    else:
        gtk = support.GtkTarget("editable", tmp_path, bus_env)
        x11.xdotool(display, "windowfocus", "--sync", gtk.window)
        close = gtk.close
    try:
        check = focused_check(bus_env)
        typed, verifies, inserts = [], [], []
        xdotool, inserter = XdotoolOutput(bus_env), AtspiOutput(bus_env)
        for _ in range(10):
            found = check.capture()
            started = time.perf_counter()
            xdotool.deliver(HUNDRED)
            typed.append(1000 * (time.perf_counter() - started))
            result = check.verify(found, HUNDRED, timeout=5)
            assert result.outcome is Outcome.VERIFIED
            verifies.append(result.elapsed_ms)
            found = check.capture()
            started = time.perf_counter()
            inserter.deliver(HUNDRED)
            inserts.append(1000 * (time.perf_counter() - started))
            assert check.verify(found, HUNDRED).outcome is Outcome.VERIFIED
        print(
            f"\nFIGURES X11 {toolkit}: xdotool 100 chars {statistics.median(typed):.1f} ms, "
            f"verify after xdotool {statistics.median(verifies):.1f} ms, "
            f"atspi insert 100 chars {statistics.median(inserts):.1f} ms"
        )
    finally:
        close()


def test_accessibility_connects_once(bus_env: dict[str, str]) -> None:
    bus = Accessibility(bus_env)
    assert bus.available() is None
    bus.close()
