"""Hostile peers on the accessibility bus, as real D-Bus programs in their own processes.

- `SilentBus`: a bus that accepts connections and authenticates them (SASL EXTERNAL, as
  dbus-daemon does), then never answers anything, not even Hello. It counts connections.
- `HostileApp`: an application on a real accessibility bus (registered with at-spi2's
  registry, as GTK and Qt register) whose one window holds a focused, editable text field,
  and which misbehaves as asked: every answer late, one method answered with a value of the
  wrong D-Bus type, an insertion answered late, with an error or never. It records every
  call it gets and the text its field holds.

Run as a script (``python tests/support/atspi_peers.py silent-bus SOCKET`` or
``... app BEHAVIOUR FOLDER``) it is that peer.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = "/org/a11y/atspi/accessible/root"
WINDOW = "/org/a11y/atspi/accessible/1"
FIELD = "/org/a11y/atspi/accessible/2"
APP_NAME = "voxtray-hostile-peer"
_REGISTRY = "org.a11y.atspi.Registry"
_ACCESSIBLE = "org.a11y.atspi.Accessible"
_STATES_WINDOW = (1 << 1) | (1 << 8) | (1 << 24) | (1 << 25) | (1 << 30)  # active, showing...
_STATES_FIELD = (1 << 12) | (1 << 7) | (1 << 8) | (1 << 17) | (1 << 24) | (1 << 25) | (1 << 30)


class SilentBus:
    """A bus at ``folder/bus`` that authenticates and then says nothing."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "bus"
        self.count_file = folder / "connections"
        script = str(Path(__file__).resolve())
        self.proc = subprocess.Popen(
            [sys.executable, script, "silent-bus", str(self.path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("the silent bus did not start")
        self.address = f"unix:path={self.path}"

    def connections(self) -> int:
        try:
            return int(self.count_file.read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class HostileApp:
    """An application on the accessibility bus of ``env`` that behaves as ``behaviour`` says.

    ``behaviour``: comma-separated ``slow=SECONDS`` (every answer that late),
    ``garbled=METHOD`` (that method, or property, answered with a value of the wrong type:
    GetState, GetChildren, GetText, CaretOffset, InsertText, GetRoleName),
    ``insert-late=SECONDS``, ``insert-error``, ``insert-silent`` (the text is inserted, the
    answer comes late, as an error, or never), or ``plain``.
    """

    def __init__(self, behaviour: str, folder: Path, env: dict[str, str]) -> None:
        from tests.support.process import start_announcing

        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        script = str(Path(__file__).resolve())
        environ = {**env, "PYTHONPATH": os.pathsep.join(sys.path)}
        command = [sys.executable, script, "app", behaviour, str(folder)]
        self.proc, line = start_announcing(command, environ, "hostile accessible application")
        self.name = line.split()[1]

    def calls(self) -> list[str]:
        try:
            return (self.folder / "calls").read_text().split()
        except FileNotFoundError:
            return []

    def text(self) -> str:
        try:
            return (self.folder / "text").read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def close(self) -> None:
        from tests.support.process import stop_process

        stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# --- the peers themselves (run in their own processes) ------------------------------------


def _run_silent_bus(path: Path) -> int:  # pragma: no cover - runs in the child
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(64)
    count_file = path.parent / "connections"
    count_file.write_text("0")
    accepted = 0
    print("ready", flush=True)
    while True:
        connection, _ = server.accept()
        accepted += 1
        count_file.write_text(str(accepted))
        threading.Thread(target=_authenticate_then_ignore, args=(connection,), daemon=True).start()


def _authenticate_then_ignore(connection: socket.socket) -> None:  # pragma: no cover
    guid = os.urandom(16).hex()
    buffer = b""
    begun = False
    while True:
        data = connection.recv(4096)
        if not data:
            connection.close()
            return
        if begun:
            continue  # Hello and everything after it: read, never answered
        buffer += data.lstrip(b"\0")
        while b"\r\n" in buffer and not begun:
            line, buffer = buffer.split(b"\r\n", 1)
            command = line.split()
            if command[:2] == [b"AUTH", b"EXTERNAL"]:
                connection.sendall(b"DATA\r\n" if len(command) == 2 else f"OK {guid}\r\n".encode())
            elif command[:1] == [b"DATA"]:
                connection.sendall(f"OK {guid}\r\n".encode())
            elif command[:1] == [b"NEGOTIATE_UNIX_FD"]:
                connection.sendall(b"AGREE_UNIX_FD\r\n")
            elif command[:1] == [b"BEGIN"]:
                begun = True
            else:
                connection.sendall(b"REJECTED EXTERNAL\r\n")


class _Peer:  # pragma: no cover - runs in the child
    def __init__(self, behaviour: str, folder: Path) -> None:
        self.flags = dict([*item.split("=", 1), ""][:2] for item in behaviour.split(",") if item)
        self.folder = folder
        self.text = ""
        self.caret = 0
        self.send_lock = threading.Lock()
        self.log_lock = threading.Lock()
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        session = open_dbus_connection(bus=os.environ["DBUS_SESSION_BUS_ADDRESS"])
        launcher = DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus")
        reply = session.send_and_get_reply(new_method_call(launcher, "GetAddress"), timeout=5)
        session.close()
        self.connection = open_dbus_connection(bus=str(reply.body[0]))
        self._dump()

    def _dump(self) -> None:
        partial = self.folder / "text.partial"
        partial.write_text(self.text, encoding="utf-8")
        os.replace(partial, self.folder / "text")

    def _log(self, method: str) -> None:
        with self.log_lock, open(self.folder / "calls", "a") as calls:
            calls.write(method + "\n")

    def send(self, message: object) -> None:
        with self.send_lock:
            self.connection.send(message)

    def register(self) -> None:
        from jeepney import DBusAddress, new_method_call

        registry = DBusAddress(ROOT, bus_name=_REGISTRY, interface="org.a11y.atspi.Socket")
        name = self.connection.unique_name
        self.send(new_method_call(registry, "Embed", "(so)", ((name, ROOT),)))

    def serve(self) -> None:
        from jeepney import MessageType

        print("ready", self.connection.unique_name, flush=True)
        while True:
            message = self.connection.receive()
            if message.header.message_type is MessageType.method_call:
                threading.Thread(target=self.answer, args=(message,), daemon=True).start()

    def answer(self, message: object) -> None:
        from jeepney import new_error, new_method_return
        from jeepney.low_level import HeaderFields

        fields = message.header.fields  # type: ignore[attr-defined]
        method = fields.get(HeaderFields.member, "")
        body = message.body  # type: ignore[attr-defined]
        name = str(body[1]) if method == "Get" and len(body) == 2 else method
        self._log(name)
        delay = float(self.flags.get("slow") or 0)
        if delay:
            time.sleep(delay)
        if method == "InsertText" and self._insertion(body, message):
            return
        if self.flags.get("garbled") == name:
            signature, values = _GARBLED.get(name, ("s", ("x",)))
        else:
            found = self.reply(fields.get(HeaderFields.path, ""), name, body)
            if found is None:
                error = "org.freedesktop.DBus.Error.UnknownMethod"
                self.send(new_error(message, error, "s", (f"no {name} here",)))
                return
            signature, values = found
        self.send(new_method_return(message, signature, values))

    def _insertion(self, body: tuple[object, ...], message: object) -> bool:
        """Insert; True when the answer was (or will never be) sent here."""
        from jeepney import new_error, new_method_return

        position, text = int(str(body[0])), str(body[1])
        if "insert-error" in self.flags:
            error = "org.freedesktop.DBus.Error.Failed"
            self.send(new_error(message, error, "s", ("the field is busy",)))
            return True
        self.text = self.text[:position] + text + self.text[position:]
        self.caret = position + len(text)
        self._dump()
        if "insert-silent" in self.flags:
            return True
        late = float(self.flags.get("insert-late") or 0)
        if late:
            time.sleep(late)
            self.send(new_method_return(message, "b", (True,)))
            return True
        return False

    def reply(self, path: str, name: str, body: tuple[object, ...]) -> tuple[str, tuple] | None:
        if name == "Name":
            return "v", (("s", APP_NAME if path == ROOT else ""),)
        if name == "ToolkitName":
            return "v", (("s", "hostile"),)
        if name == "CaretOffset":
            return "v", (("i", self.caret),)
        if name == "GetChildren":
            child = {ROOT: WINDOW, WINDOW: FIELD}.get(path)
            name_ = self.connection.unique_name
            return "a(so)", ([(name_, child)] if child else [],)
        if name == "GetState":
            bits = {WINDOW: _STATES_WINDOW, FIELD: _STATES_FIELD}.get(path, 0)
            return "au", ([bits & 0xFFFFFFFF, bits >> 32],)
        if name == "GetRoleName":
            return "s", ({ROOT: "application", WINDOW: "frame"}.get(path, "text"),)
        if name == "GetInterfaces":
            text_ifaces = ["org.a11y.atspi.Text", "org.a11y.atspi.EditableText"]
            return "as", ([_ACCESSIBLE, *(text_ifaces if path == FIELD else [])],)
        if name == "GetText":
            return "s", (self.text,)
        if name in ("InsertText", "SetCaretOffset"):
            if name == "SetCaretOffset":
                self.caret = int(str(body[0]))
            return "b", (True,)
        return None


_GARBLED: dict[str, tuple[str, tuple[object, ...]]] = {
    "GetState": ("as", (["x", "y"],)),
    "GetChildren": ("as", (["x"],)),
    "GetText": ("i", (5,)),
    "CaretOffset": ("v", (("s", "x"),)),
    "InsertText": ("s", ("x",)),
    "GetRoleName": ("i", (7,)),
}


def _run_app(behaviour: str, folder: Path) -> int:  # pragma: no cover - runs in the child
    peer = _Peer(behaviour, folder)
    peer.register()
    peer.serve()
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "silent-bus":
        raise SystemExit(_run_silent_bus(Path(sys.argv[2])))
    raise SystemExit(_run_app(sys.argv[2], Path(sys.argv[3])))
