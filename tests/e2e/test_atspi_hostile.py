"""Hostile applications on a real accessibility bus (tests/support/atspi_peers.py): answers
of the wrong D-Bus type, every answer late, an insertion answered late, with an error, or
never. Voxtray's checks, the `atspi` output and whole dictations (the real model) face them
on Xvfb, with the accessibility bus on a private session bus and a real Qt window, not on
the bus, that xdotool types into when the bus cannot be used: the text always arrives, or
is on the clipboard, and the check never holds it up."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import atspi as support
from tests.support import x11
from tests.support.atspi_peers import HostileApp, SilentBus
from tests.support.audio import REPO
from tests.support.dictation_rig import build_dictation
from tests.support.models import ensure_installed
from tests.support.process import run_voxtray
from tests.support.pulse import virtual_microphone
from tests.support.tray_app import returning_home, running_tray_app
from tests.support.waiting import wait_for
from voxtray.config import Settings
from voxtray.desktop.atspi import Accessibility, Unavailable
from voxtray.models.store import ModelStore
from voxtray.output.atspi import AtspiOutput
from voxtray.output.verify import FieldCheck
from voxtray.output.xdotool import XdotoolOutput

pytestmark = pytest.mark.skipif(
    bool(x11.missing_tools() or support.missing()),
    reason=support.missing() or f"needs {', '.join(x11.missing_tools())}",
)


@pytest.fixture(scope="module")
def bus_env() -> Iterator[dict[str, str]]:
    with support.x_display_with_bus() as env:
        yield env


@pytest.fixture
def window(bus_env: dict[str, str], tmp_path: Path) -> Iterator[x11.TargetWindow]:
    """A Qt window with the X focus, which the accessibility bus does not see."""
    target = x11.TargetWindow(bus_env["DISPLAY"], tmp_path)
    try:
        target.focus()
        yield target
    finally:
        target.close()


@contextlib.contextmanager
def hostile(behaviour: str, folder: Path, env: dict[str, str]) -> Iterator[HostileApp]:
    """The hostile application, once the registry lists it."""
    app = HostileApp(behaviour, folder, env)
    bus = Accessibility(env)

    def registered() -> bool:
        with contextlib.suppress(Unavailable):
            return app.name in {ref.bus_name for ref in bus.applications()}
        return False

    try:
        wait_for(registered, 15, f"{behaviour}: the registry never listed the application")
        yield app
    finally:
        bus.close()
        app.close()


def typing_the_usual_way(env: dict[str, str]) -> AtspiOutput:
    """`atspi` as auto chooses it on GNOME and KDE: another way to deliver behind it."""
    return AtspiOutput(env, fallback=XdotoolOutput(env))


@pytest.mark.parametrize("method", ["GetState", "CaretOffset"])
def test_an_answer_that_cannot_be_read_sends_the_text_the_usual_way(
    bus_env: dict[str, str], tmp_path: Path, window: x11.TargetWindow, method: str
) -> None:
    with hostile(f"garbled={method}", tmp_path / "app", bus_env) as app:
        found = FieldCheck(bus_env).capture()
        if method == "GetState":
            assert found.widget is None
        delivery = typing_the_usual_way(bus_env).deliver("typed the usual way")
        assert delivery.unchecked is not None
        assert window.wait_for("typed the usual way") == "typed the usual way"
        assert app.text() == ""


def test_a_slow_application_costs_one_deadline_not_a_walk(
    bus_env: dict[str, str], tmp_path: Path, window: x11.TargetWindow
) -> None:
    with hostile("slow=0.4", tmp_path / "app", bus_env) as app:
        check = FieldCheck(bus_env)
        check.accessibility.connect()
        asked = len(app.calls())
        found = check.capture()
        assert found.widget is None
        assert found.reason is not None
        # Each answer takes 0.4 s: past the check's deadline after the first question,
        # where the walk used to ask one question after another for seconds.
        assert len(app.calls()) - asked <= 1
        asked = len(app.calls())
        typing_the_usual_way(bus_env).deliver("not held up")
        assert window.wait_for("not held up") == "not held up"
        assert len(app.calls()) - asked <= 1


@pytest.mark.parametrize("behaviour", ["insert-late=0.8", "insert-silent"])
def test_an_insertion_that_arrived_is_typed_however_late_the_answer(
    bus_env: dict[str, str], tmp_path: Path, behaviour: str
) -> None:
    with hostile(behaviour, tmp_path / "app", bus_env) as app:
        delivery = AtspiOutput(bus_env).deliver("late but there")
        assert delivery.complete, delivery
        assert app.text() == "late but there"


def test_an_insertion_error_leaves_the_text_on_the_clipboard(
    bus_env: dict[str, str], tmp_path: Path
) -> None:
    with hostile("insert-error", tmp_path / "app", bus_env) as app:
        delivery = AtspiOutput(bus_env).deliver("kept for the user")
        assert not delivery.complete
        assert delivery.to_clipboard_text == "kept for the user"
        assert "did not confirm" in (delivery.reason or "")
        assert app.text() == ""
        assert x11.xclip_get(bus_env["DISPLAY"]) == b"kept for the user"


@pytest.fixture
def session_env(bus_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process in the test's desktop session, as the tray app would be."""
    for key in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_SESSION_TYPE"):
        monkeypatch.setenv(key, bus_env[key])
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("AT_SPI_BUS_ADDRESS", raising=False)
    return bus_env


@pytest.mark.parametrize("behaviour", ["garbled=GetState", "slow=0.4"])
def test_a_dictation_beside_a_hostile_application_is_typed_unverified(
    session_env: dict[str, str],
    tmp_path: Path,
    window: x11.TargetWindow,
    model_store: ModelStore,
    behaviour: str,
) -> None:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    with hostile(behaviour, tmp_path / "app", session_env) as app:
        rig = build_dictation(
            model_store,
            tmp_path / "history.sqlite3",
            output_factory=lambda name: typing_the_usual_way(session_env),
        )
        dictation = rig.dictation
        try:
            dictation.load(Settings())
            asked = len(app.calls())
            assert dictation.start()
            rig.fake.streams[-1].wait_for(rig.speak())
            released = time.perf_counter()
            utterance = dictation.stop()
            ready_s = time.perf_counter() - released
            assert utterance is not None, rig.warnings
            assert utterance.delivered, utterance.error
            assert dictation.checks.wait(5)
            assert dictation.status()["last"]["verified"] == "unverified"
            assert "birch canoe" in window.wait_for(utterance.text).lower()
            if behaviour.startswith("slow"):
                # The start-of-dictation check and the output's look-up: one question each.
                assert len(app.calls()) - asked <= 2, app.calls()[asked:]
            print(f"\n{behaviour}: release to ready {1000 * ready_s:.0f} ms")
        finally:
            rig.close()


@pytest.mark.slow
@pytest.mark.parametrize("variable", ["AT_SPI_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"])
def test_the_tray_app_starts_beside_a_bus_that_never_says_hello(
    desktop: str, tmp_path: Path, model_store: ModelStore, variable: str
) -> None:
    home = returning_home(tmp_path, model_store, hud_enabled=True)  # a window at start
    silent = SilentBus(tmp_path)
    log = tmp_path / "voxtray.log"
    try:
        with virtual_microphone() as mic:
            env = {**mic.env, **x11.x_env(desktop), "VOXTRAY_HOME": str(home)}
            env[variable] = silent.address
            with running_tray_app(env, log) as app:
                # The GUI runs: the icon is in the tray, and `voxtray quit` reaches it.
                wait_for(lambda: (x11.tray_panel(desktop) or {"WIDTH": 0})["WIDTH"] >= 20, 30)
                run_voxtray("quit", env=env, timeout=30, cwd=REPO)
                assert app.wait(timeout=30) == 0
    finally:
        silent.close()
    said = [line for line in log.read_text().splitlines() if "does not answer" in line]
    assert len(said) == 1, log.read_text()
    assert said[0].startswith("voxtray: the ")
    assert silent.address.removeprefix("unix:path=") in said[0]
    # Asked once, by the probe before Qt started; Qt itself never connected to it (it
    # waited 25 s there before showing anything, on each bus it was pointed at).
    assert silent.connections() == 1
