"""Hyprland's command socket, as `hyprctl` speaks it: which window has the focus, and which
windows exist. One request a connection, closed at once: Hyprland answers its clients one at
a time, and a connection left open holds the compositor up."""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_S = 1.0


@dataclass(frozen=True)
class HyprWindow:
    """One window: its address (Hyprland's id), its class now and at start, its title."""

    address: int
    app_class: str
    initial_class: str
    title: str

    @property
    def app_names(self) -> tuple[str, ...]:
        names = (self.app_class.lower(), self.initial_class.lower())
        return tuple(dict.fromkeys(name for name in names if name))


def socket_path(env: Mapping[str, str]) -> Path | None:
    """The instance's command socket, in the user's runtime folder (Hyprland 0.40 and
    later; earlier ones kept it in /tmp, where anyone could have made it); None outside
    Hyprland."""
    signature = env.get("HYPRLAND_INSTANCE_SIGNATURE", "")
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if not signature or "/" in signature or not runtime:
        return None
    path = Path(runtime) / "hypr" / signature / ".socket.sock"
    return path if path.exists() else None


def active_window(env: Mapping[str, str]) -> HyprWindow | None:
    """The window with the focus; None when none has it.

    Raises:
        OSError: Hyprland cannot be reached, or its answer cannot be read.
    """
    reply = _ask(env, "j/activewindow")
    return _window(reply) if isinstance(reply, dict) and reply else None


def window_addresses(env: Mapping[str, str]) -> set[int]:
    """The addresses of every window that exists now.

    Raises:
        OSError: Hyprland cannot be reached, or its answer cannot be read.
    """
    reply = _ask(env, "j/clients")
    if not isinstance(reply, list):
        raise OSError("Hyprland listed no windows")
    return {_window(item).address for item in reply if isinstance(item, dict)}


def _window(item: dict[str, object]) -> HyprWindow:
    def text(key: str) -> str:
        value = item.get(key)
        return value if isinstance(value, str) else ""

    try:
        address = int(text("address"), 16)
    except ValueError as exc:
        raise OSError(f"Hyprland named a window {text('address')!r}") from exc
    return HyprWindow(address, text("class"), text("initialClass"), text("title"))


def _ask(env: Mapping[str, str], request: str) -> object:
    path = socket_path(env)
    if path is None:
        raise FileNotFoundError("no Hyprland command socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(TIMEOUT_S)
        connection.connect(str(path))
        connection.sendall(request.encode())
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except ValueError as exc:
        raise OSError(f"Hyprland answered {request!r} with no JSON") from exc
