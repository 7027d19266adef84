"""Delivery on a real Wayland desktop (tests/support/wayland.py: headless sway with a virtual
keyboard kept on the seat), Qt windows on Wayland, wtype typing, wl-clipboard for the rest.
sway's focused node is the target."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import x11
from tests.support.outputs import after_first_piece
from tests.support.waiting import steady
from tests.support.wayland import (
    WaylandDesktop,
    skip_without_tools,
    wayland_desktop,
)
from voxtray.desktop.session import DesktopSession
from voxtray.output import FocusTarget
from voxtray.output.delivery import chunks
from voxtray.output.target import TargetKind
from voxtray.output.wtype import WtypeOutput

LONG = (
    "Words typed into a Wayland window a few at a time, the focused node checked "
    "between the pieces through swaymsg, until the window is gone."
)


@pytest.fixture(scope="module")
def sway() -> Iterator[WaylandDesktop]:
    skip_without_tools()
    with wayland_desktop() as desktop:
        yield desktop


def node_of(sway: WaylandDesktop, pid: int) -> int:
    """The con id of the window a process shows."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for node in sway.windows():
            if node.get("pid") == pid and node.get("type") == "con":
                return int(node["id"])
        time.sleep(0.05)
    raise RuntimeError(f"no sway window for process {pid}")


def focus(sway: WaylandDesktop, node: int) -> None:
    sway.swaymsg(f"[con_id={node}]", "focus")


@dataclasses.dataclass
class Window:
    view: x11.TargetWindow
    node: int


@pytest.fixture
def windows(sway: WaylandDesktop, tmp_path: Path) -> Iterator[tuple[Window, Window]]:
    """Two Qt windows side by side; the first one focused."""
    opened = []
    try:
        for name in ("a", "b"):
            folder = tmp_path / name
            folder.mkdir()
            env = sway.env()
            env["QT_QPA_PLATFORM"] = "wayland"
            view = x11.TargetWindow("", folder, env=env)
            opened.append(Window(view, node_of(sway, view.proc.pid)))
        focus(sway, opened[0].node)
        yield opened[0], opened[1]
    finally:
        for window in opened:
            window.view.close()


def test_target_is_the_focused_sway_node(
    sway: WaylandDesktop, windows: tuple[Window, Window]
) -> None:
    first, second = windows
    target = FocusTarget.capture(DesktopSession.from_env(sway.env()), sway.env())
    assert (target.kind, target.ident) == (TargetKind.SWAY, first.node)
    assert target.description == f'window "{x11.TITLE}" ({first.node})'
    focus(sway, second.node)
    assert target.lost() == (
        f'the focus moved from {target.description} to window "{x11.TITLE}" ({second.node})'
    )


def test_wtype_delivers_all_while_focused(
    sway: WaylandDesktop, windows: tuple[Window, Window]
) -> None:
    first, second = windows
    output = WtypeOutput(sway.env())
    assert output.problem() is None
    delivery = output.deliver(LONG)
    assert first.view.wait_for(LONG) == LONG
    assert delivery.complete
    assert delivery.target == f'window "{x11.TITLE}" ({first.node})'
    assert second.view.text() == ""


def test_window_closed_mid_typing(sway: WaylandDesktop, windows: tuple[Window, Window]) -> None:
    """sway focuses the other window when the target closes: it must get nothing."""
    first, second = windows
    piece = chunks(LONG)[0]

    def close_target() -> None:
        assert first.view.wait_for(piece) == piece
        first.view.close()
        deadline = time.monotonic() + 5
        while any(node.get("id") == first.node for node in sway.windows()):
            assert time.monotonic() < deadline
            time.sleep(0.02)

    output = WtypeOutput(sway.env())
    target = after_first_piece(output.capture_target(), close_target)
    delivery = output.deliver(LONG, target)
    assert delivery.typed_text == piece
    assert delivery.to_clipboard_text == LONG[len(piece) :]
    assert delivery.reason == f"{target.description} was closed"
    assert sway.clipboard() == LONG[len(piece) :].encode()
    assert steady(lambda: second.view.text() == "")


def test_focus_moved_mid_typing(sway: WaylandDesktop, windows: tuple[Window, Window]) -> None:
    first, second = windows
    piece = chunks(LONG)[0]

    def move_focus() -> None:
        assert first.view.wait_for(piece) == piece
        focus(sway, second.node)

    output = WtypeOutput(sway.env())
    target = after_first_piece(output.capture_target(), move_focus)
    delivery = output.deliver(LONG, target)
    assert delivery.typed_text == piece
    assert (delivery.reason or "").startswith("the focus moved from")
    assert sway.clipboard() == LONG[len(piece) :].encode()
    assert steady(lambda: second.view.text() == "" and first.view.text() == piece)
