"""The focused window on Hyprland, asked on its command socket: the app names a mode is
chosen by, and the checks that the window still has the focus.

Hyprland is not packaged for Debian 12, so the socket here is served by a stand-in that
answers as Hyprland 0.4x does (one request a connection, a JSON reply, then the connection
closed); what is tested is everything on Voxtray's side of that socket."""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from voxtray.desktop import hyprland
from voxtray.desktop.session import DesktopSession
from voxtray.modes import DEFAULT_MODES, AppIdentity, parse_modes
from voxtray.output.target import FocusTarget, TargetKind

SIGNATURE = "4520b30d498daca8079365bdb909a8dea38e8d55_1733420000_1804289383"


def _client(address: int, app_class: str, title: str) -> dict[str, object]:
    return {
        "address": f"{address:#x}",
        "class": app_class,
        "initialClass": app_class,
        "title": title,
        "initialTitle": title,
        "pid": 4242,
        "xwayland": False,
    }


class StandIn:
    """Answers ``j/activewindow`` and ``j/clients`` from ``clients`` and ``active``."""

    def __init__(self, runtime: Path) -> None:
        folder = runtime / "hypr" / SIGNATURE
        folder.mkdir(parents=True)
        self.clients = [_client(0x55D0A1, "kitty", "~/src"), _client(0x55D0B2, "firefox", "Inbox")]
        self.active: dict[str, object] = self.clients[0]
        self.requests: list[str] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(folder / ".socket.sock"))
        self._server.listen()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            with connection:
                request = connection.recv(4096).decode()
                self.requests.append(request)
                reply = {"j/activewindow": self.active, "j/clients": self.clients}.get(request)
                connection.sendall(
                    b"unknown request" if reply is None else json.dumps(reply).encode()
                )

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def hypr() -> Iterator[tuple[StandIn, dict[str, str]]]:
    # A socket's path has room for 107 bytes: the runtime folder is short, as /run/user/N is.
    runtime = Path(tempfile.mkdtemp(prefix="vx"))
    env = {
        "WAYLAND_DISPLAY": "wayland-1",
        "XDG_CURRENT_DESKTOP": "Hyprland",
        "HYPRLAND_INSTANCE_SIGNATURE": SIGNATURE,
        "XDG_RUNTIME_DIR": str(runtime),
    }
    stand_in = StandIn(runtime)
    yield stand_in, env
    stand_in.close()
    shutil.rmtree(runtime)


def _capture(env: dict[str, str]) -> FocusTarget:
    return FocusTarget.capture(DesktopSession.from_env(env, "linux"), env)


def test_the_active_window_names_its_app_and_picks_its_mode(
    hypr: tuple[StandIn, dict[str, str]],
) -> None:
    stand_in, env = hypr
    target = _capture(env)
    assert target.kind is TargetKind.HYPRLAND
    assert target.ident == 0x55D0A1
    assert target.app_names == ("kitty",)
    assert target.title == "~/src"
    assert target.description == 'window "~/src" (0x55d0a1)'
    mode = parse_modes(DEFAULT_MODES).for_app(AppIdentity(target.app_names, target.title))
    assert mode is not None
    assert mode.name == "terminal"
    assert stand_in.requests == ["j/activewindow"]


def test_the_checks_follow_the_focus_and_the_window(
    hypr: tuple[StandIn, dict[str, str]],
) -> None:
    stand_in, env = hypr
    target = _capture(env)
    assert target.lost() is None
    stand_in.active = stand_in.clients[1]
    assert (
        target.lost()
        == 'the focus moved from window "~/src" (0x55d0a1) to window "Inbox" (0x55d0b2)'
    )
    stand_in.active = {}  # an empty workspace has the focus
    assert target.lost() == 'window "~/src" (0x55d0a1) lost the focus'
    stand_in.clients = stand_in.clients[1:]
    assert target.lost() == 'window "~/src" (0x55d0a1) was closed'


def test_no_window_focused_or_no_compositor_is_an_unknown_target(
    hypr: tuple[StandIn, dict[str, str]], tmp_path: Path
) -> None:
    stand_in, env = hypr
    stand_in.active = {}
    assert _capture(env).kind is TargetKind.UNKNOWN
    stand_in.close()  # Hyprland gone: nothing raises, and the checks pass as before
    gone = _capture({**env, "XDG_RUNTIME_DIR": str(tmp_path / "elsewhere")})
    assert gone.kind is TargetKind.UNKNOWN
    assert gone.lost() is None
    assert hyprland.socket_path({**env, "HYPRLAND_INSTANCE_SIGNATURE": "../../etc"}) is None


def test_a_reply_that_is_no_json_is_an_os_error(hypr: tuple[StandIn, dict[str, str]]) -> None:
    _, env = hypr
    with pytest.raises(OSError, match="no JSON"):
        hyprland._ask(env, "j/monitors")
