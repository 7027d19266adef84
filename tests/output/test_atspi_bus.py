"""Buses that never say hello: a real peer (tests/support/atspi_peers.py) that accepts the
connection, authenticates it as dbus-daemon does, then never answers. Voxtray's checks must
leave no thread or descriptor behind, must not ask it again for a while, and the tray app's
start must keep Qt off it (`keep_off_dead_buses`)."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import atspi as support
from tests.support.atspi_peers import SilentBus
from voxtray.desktop.bus import Deadline
from voxtray.desktop.bus_guard import NO_BUS, keep_off_dead_buses
from voxtray.output.atspi import AtspiOutput
from voxtray.output.verify import FieldCheck

DICTATIONS = 20


@pytest.fixture
def silent_bus(tmp_path: Path) -> Iterator[SilentBus]:
    bus = SilentBus(tmp_path)
    try:
        yield bus
    finally:
        bus.close()


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("variable", ["AT_SPI_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"])
def test_a_bus_that_never_says_hello_leaks_nothing_and_is_left_alone(
    silent_bus: SilentBus, variable: str
) -> None:
    env = {variable: silent_bus.address}
    check = FieldCheck(env)
    threads, descriptors = threading.active_count(), open_descriptors()
    reasons = {check.capture().reason for _ in range(DICTATIONS)}
    # At most as many: what an earlier test left running may end meanwhile (seen in CI).
    assert threading.active_count() <= threads
    assert open_descriptors() <= descriptors
    assert silent_bus.connections() == 1  # found dead once, not asked again by every dictation
    (reason,) = reasons
    assert reason is not None
    assert "did not answer" in reason
    assert "\n" not in reason
    assert AtspiOutput(env, "linux").problem() == reason
    assert silent_bus.connections() == 1


def test_a_deadline_gives_each_step_what_is_left() -> None:
    deadline = Deadline(10.0)
    assert deadline.limit(0.5) == 0.5
    assert 9.0 < deadline.limit(60.0) <= 10.0
    with pytest.raises(TimeoutError, match="over the 0 ms"):
        Deadline(0.0).limit(0.5)


@pytest.mark.parametrize("variable", ["AT_SPI_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"])
def test_the_app_start_keeps_qt_off_a_silent_bus(silent_bus: SilentBus, variable: str) -> None:
    env = {"PATH": "/usr/bin", variable: silent_bus.address}
    line = keep_off_dead_buses(env)
    assert line is not None
    assert "does not answer" in line
    assert "\n" not in line
    assert env["AT_SPI_BUS_ADDRESS"] == NO_BUS
    if variable == "DBUS_SESSION_BUS_ADDRESS":
        assert env[variable] == NO_BUS
    # Voxtray's own checks, pointed at the stand-in, say why in one line, at once.
    reason = FieldCheck(env).capture().reason
    assert reason is not None
    assert "when Voxtray started" in reason


def test_the_app_start_leaves_a_live_bus_alone() -> None:
    if support.missing() or shutil.which("dbus-daemon") is None:
        pytest.skip(support.missing() or "dbus-daemon not installed")
    environ = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    with support.a11y_bus(environ) as env:
        before = dict(env)
        assert keep_off_dead_buses(env) is None
        assert env == before
