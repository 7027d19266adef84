"""Delivery on a real Wayland desktop: headless sway, Qt windows on Wayland, wtype typing,
wl-clipboard for the rest. sway's focused node is the target."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.desktop.session import DesktopSession
from app.output import FocusTarget
from app.output.delivery import chunks
from app.output.target import TargetKind
from app.output.wtype import WtypeOutput
from tests import xdesktop

_TOOLS = ("sway", "swaymsg", "wtype", "wl-copy", "wl-paste")
_MISSING = [tool for tool in _TOOLS if shutil.which(tool) is None]
# sway refuses to run as root; as root the compositor runs as nobody.
_AS_NOBODY = os.geteuid() == 0
if _AS_NOBODY and shutil.which("runuser") is None:
    _MISSING.append("runuser")

pytestmark = pytest.mark.skipif(
    bool(_MISSING), reason=f"needs {', '.join(_MISSING)} (apt-get install sway wtype wl-clipboard)"
)

LONG = (
    "Words typed into a Wayland window a few at a time, the focused node checked "
    "between the pieces through swaymsg, until the window is gone."
)


class Sway:
    """A headless sway in a runtime folder of its own."""

    def __init__(self) -> None:
        # Outside pytest's folders, which the compositor's user could not enter.
        self.folder = Path(tempfile.mkdtemp(prefix="voxtray-sway-"))
        self.runtime = self.folder / "runtime"
        self.runtime.mkdir(mode=0o700)
        config = self.folder / "sway.config"
        config.write_text("output HEADLESS-1 resolution 1280x800\nxwayland disable\n")
        base = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "XDG_RUNTIME_DIR": str(self.runtime),
            "WLR_BACKENDS": "headless",
            "WLR_LIBINPUT_NO_DEVICES": "1",
            "WLR_RENDERER": "pixman",
        }
        command = ["sway", "-c", str(config)]
        if _AS_NOBODY:
            for path in (self.folder, self.runtime, config):
                os.chown(path, 65534, -1)
            pairs = [f"{key}={value}" for key, value in base.items()]
            runuser = shutil.which("runuser") or "runuser"
            command = [runuser, "-u", "nobody", "--", "env", "-i", *pairs, *command]
        self.proc = subprocess.Popen(
            command,
            env=base,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.env = self._wait_ready()

    def _wait_ready(self) -> dict[str, str]:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.proc.poll() is None:
            sockets = sorted(self.runtime.glob("sway-ipc.*.sock"))
            displays = sorted(self.runtime.glob("wayland-[0-9]"))
            if sockets and displays:
                env = {
                    key: value
                    for key, value in os.environ.items()
                    if key not in ("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY")
                }
                env.update(
                    XDG_RUNTIME_DIR=str(self.runtime),
                    WAYLAND_DISPLAY=displays[0].name,
                    SWAYSOCK=str(sockets[0]),
                    XDG_CURRENT_DESKTOP="sway",
                    XDG_SESSION_TYPE="wayland",
                    QT_QPA_PLATFORM="wayland",
                )
                return env
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("headless sway did not start")

    def tree(self) -> dict[str, object]:
        done = subprocess.run(
            ["swaymsg", "-t", "get_tree"],
            env=self.env,
            capture_output=True,
            check=True,
            timeout=10,
        )
        tree: dict[str, object] = json.loads(done.stdout)
        return tree

    def node_of(self, pid: int) -> int:
        """The con id of the window a process shows."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for node in _nodes(self.tree()):
                ident = node.get("id")
                if node.get("pid") == pid and node.get("type") == "con" and isinstance(ident, int):
                    return ident
            time.sleep(0.05)
        raise RuntimeError(f"no sway window for process {pid}")

    def focus(self, node: int) -> None:
        subprocess.run(
            ["swaymsg", f"[con_id={node}]", "focus"],
            env=self.env,
            capture_output=True,
            check=True,
            timeout=10,
        )

    def clipboard(self) -> bytes | None:
        done = subprocess.run(
            ["wl-paste", "--no-newline"], env=self.env, capture_output=True, timeout=10
        )
        return done.stdout if done.returncode == 0 else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _nodes(node: dict[str, object]) -> Iterator[dict[str, object]]:
    yield node
    for key in ("nodes", "floating_nodes"):
        children = node.get(key)
        if isinstance(children, list):
            for child in children:
                yield from _nodes(child)


@pytest.fixture(scope="module")
def sway() -> Iterator[Sway]:
    compositor = Sway()
    try:
        yield compositor
    finally:
        compositor.stop()


@dataclasses.dataclass
class Window:
    view: xdesktop.TargetWindow
    node: int


@pytest.fixture
def windows(sway: Sway, tmp_path: Path) -> Iterator[tuple[Window, Window]]:
    """Two Qt windows side by side; the first one focused."""
    opened = []
    try:
        for name in ("a", "b"):
            folder = tmp_path / name
            folder.mkdir()
            view = xdesktop.TargetWindow("", folder, env=sway.env)
            opened.append(Window(view, sway.node_of(view.proc.pid)))
        sway.focus(opened[0].node)
        yield opened[0], opened[1]
    finally:
        for window in opened:
            window.view.close()


@dataclasses.dataclass(frozen=True)
class AfterFirstPiece(FocusTarget):
    """The real target; ``action`` runs (for real) when the first piece has been typed."""

    action: Callable[[], None] = dataclasses.field(default=lambda: None, compare=False)
    checks: list[str | None] = dataclasses.field(default_factory=list, compare=False)

    def lost(self) -> str | None:
        if len(self.checks) == 1:
            self.action()
        reason = super().lost()
        self.checks.append(reason)
        return reason


def after_first_piece(target: FocusTarget, action: Callable[[], None]) -> AfterFirstPiece:
    fields = {field.name: getattr(target, field.name) for field in dataclasses.fields(target)}
    return AfterFirstPiece(**fields, action=action)


def steady(check: Callable[[], bool], seconds: float = 0.5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not check():
            return False
        time.sleep(0.02)
    return check()


def test_target_is_the_focused_sway_node(sway: Sway, windows: tuple[Window, Window]) -> None:
    first, second = windows
    target = FocusTarget.capture(DesktopSession.from_env(sway.env), sway.env)
    assert (target.kind, target.ident) == (TargetKind.SWAY, first.node)
    assert target.description == f'window "{xdesktop.TITLE}" ({first.node})'
    sway.focus(second.node)
    assert target.lost() == (
        f'the focus moved from {target.description} to window "{xdesktop.TITLE}" ({second.node})'
    )


def test_wtype_delivers_all_while_focused(sway: Sway, windows: tuple[Window, Window]) -> None:
    first, second = windows
    output = WtypeOutput(sway.env)
    assert output.problem() is None
    delivery = output.deliver(LONG)
    assert first.view.wait_for(LONG) == LONG
    assert delivery.complete
    assert delivery.target == f'window "{xdesktop.TITLE}" ({first.node})'
    assert second.view.text() == ""


def test_window_closed_mid_typing(sway: Sway, windows: tuple[Window, Window]) -> None:
    """sway focuses the other window when the target closes: it must get nothing."""
    first, second = windows
    piece = chunks(LONG)[0]

    def close_target() -> None:
        assert first.view.wait_for(piece) == piece
        first.view.close()
        deadline = time.monotonic() + 5
        while any(node.get("id") == first.node for node in _nodes(sway.tree())):
            assert time.monotonic() < deadline
            time.sleep(0.02)

    output = WtypeOutput(sway.env)
    target = after_first_piece(output.capture_target(), close_target)
    delivery = output.deliver(LONG, target)
    assert delivery.typed_text == piece
    assert delivery.to_clipboard_text == LONG[len(piece) :]
    assert delivery.reason == f"{target.description} was closed"
    assert sway.clipboard() == LONG[len(piece) :].encode()
    assert steady(lambda: second.view.text() == "")


def test_focus_moved_mid_typing(sway: Sway, windows: tuple[Window, Window]) -> None:
    first, second = windows
    piece = chunks(LONG)[0]

    def move_focus() -> None:
        assert first.view.wait_for(piece) == piece
        sway.focus(second.node)

    output = WtypeOutput(sway.env)
    target = after_first_piece(output.capture_target(), move_focus)
    delivery = output.deliver(LONG, target)
    assert delivery.typed_text == piece
    assert (delivery.reason or "").startswith("the focus moved from")
    assert sway.clipboard() == LONG[len(piece) :].encode()
    assert steady(lambda: second.view.text() == "" and first.view.text() == piece)
