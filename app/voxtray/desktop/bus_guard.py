"""Before the toolkit starts: a session or accessibility bus that does not answer is kept
out of its way.

Qt's accessibility bridge connects to the accessibility bus (``AT_SPI_BUS_ADDRESS``, the
address the session bus gives, or the X root window's) and to the session bus with no
time limit: a bus that accepts the connection and then never answers Hello leaves the
tray app waiting forever, before its first window. So both are tried first, each within
`PROBE_TIMEOUT_S`, and one that does not answer is replaced, in this process's
environment, by an address that fails at once (`NO_BUS`): Qt then starts without it, and
Voxtray's own accessibility checks know why.
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping

from voxtray.desktop.atspi import Unavailable, bus_address
from voxtray.desktop.bus import DEAD_BUSES, BusError, connect

PROBE_TIMEOUT_S = 0.5
"""How long each bus has to answer Hello at start (a live one answers in about 1 ms)."""
NO_BUS = "unix:path=/dev/null"
"""A bus address every D-Bus library fails to connect to at once, and quietly."""

SESSION = "DBUS_SESSION_BUS_ADDRESS"
ACCESSIBILITY = "AT_SPI_BUS_ADDRESS"


def keep_off_dead_buses(environ: MutableMapping[str, str]) -> str | None:
    """Point ``environ`` away from a session or accessibility bus that does not answer.

    Returns:
        The one line to tell the user, or None when every bus answered (or none is set).
    """
    session = environ.get(SESSION)
    if session and session != NO_BUS and (problem := _silent(session)):
        environ[SESSION] = environ[ACCESSIBILITY] = NO_BUS
        _remember(f"the session bus does not answer ({problem})")
        return f"the session bus does not answer ({problem}); starting without it"
    try:
        address = bus_address(environ, PROBE_TIMEOUT_S)
    except Unavailable:
        return None  # no accessibility bus at all: nothing for Qt to wait for
    if address == NO_BUS or not (problem := _silent(address)):
        return None
    environ[ACCESSIBILITY] = NO_BUS
    _remember(f"its bus does not answer ({problem})")
    return (
        f"the accessibility bus does not answer ({problem}); starting without it: screen "
        "readers will not see Voxtray, and delivery is not checked"
    )


def _silent(address: str) -> str | None:
    """Why the bus at ``address`` cannot be used, or None when it answered Hello."""
    try:
        connect(address, PROBE_TIMEOUT_S).close()
    except BusError as exc:
        return str(exc)
    return None


def _remember(reason: str) -> None:
    """Voxtray's own checks, pointed at `NO_BUS` from now on, say why (for the whole run)."""
    DEAD_BUSES.remember(NO_BUS, f"{reason} when Voxtray started", seconds=math.inf)
