"""The accessibility bus for desktop tests, and real targets that expose themselves on it.

`a11y_bus(env)` starts a private session bus (``dbus-daemon --session --fork``) and the
accessibility bus on it (``at-spi-bus-launcher --launch-immediately``), and waits until
``org.a11y.Bus.GetAddress`` answers; programs started with the returned environment register
their widgets there. Targets:

- the Qt text window of ``tests/support/x11.py`` with ``QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1``;
- `GtkTarget`: a GTK3 program (``python3`` with the system's GObject bindings) showing an
  editable text view, a read-only one or a button, writing its text to a file on each change.

Run as a script (``python3 tests/support/atspi.py KIND OUT``) it is that GTK program.

Debian packages: dbus at-spi2-core python3-gi gir1.2-gtk-3.0 (zenity pulls them in).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
SYSTEM_PYTHON = "/usr/bin/python3"
PACKAGES = "dbus at-spi2-core python3-gi gir1.2-gtk-3.0"
GTK_TITLE = "voxtray-gtk-target"


def missing() -> str | None:
    """Why the accessibility tests cannot run here, or None."""
    for tool in ("dbus-daemon", "dbus-send"):
        if shutil.which(tool) is None:
            return f"{tool} not installed: apt-get install {PACKAGES}"
    if not os.access(LAUNCHER, os.X_OK):
        return f"{LAUNCHER} not installed: apt-get install at-spi2-core"
    check = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import gi; gi.require_version('Gtk', '3.0')"],
        capture_output=True,
        check=False,
    )
    if check.returncode != 0:
        return f"no GTK3 for {SYSTEM_PYTHON}: apt-get install python3-gi gir1.2-gtk-3.0"
    return None


@contextlib.contextmanager
def a11y_bus(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A session bus with the accessibility bus on it; yields ``env`` pointing at it."""
    started = subprocess.run(
        ["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=10,
        check=True,
    )
    address, pid = started.stdout.split()[:2]
    bus_env = {**env, "DBUS_SESSION_BUS_ADDRESS": address}
    bus_env.pop("NO_AT_BRIDGE", None)
    bus_env.pop("AT_SPI_BUS_ADDRESS", None)
    launcher = subprocess.Popen(
        [LAUNCHER, "--launch-immediately"],
        env=bus_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while not _answers(bus_env):
            if time.monotonic() > deadline or launcher.poll() is not None:
                raise RuntimeError("the accessibility bus did not start")
            time.sleep(0.05)
        yield bus_env
    finally:
        from tests.support.process import stop_process  # not at the top: see GtkTarget

        stop_process(launcher)
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGTERM)


@contextlib.contextmanager
def x_display_with_bus() -> Iterator[dict[str, str]]:
    """A fresh X display with the accessibility bus on a private session bus; yields the
    environment that points at both."""
    from tests.support import x11

    server = x11.XServer()
    try:
        with a11y_bus(x11.x_env(server.name)) as env:
            yield env
    finally:
        server.stop()


def _answers(env: dict[str, str]) -> bool:
    done = subprocess.run(
        ["dbus-send", "--session", "--print-reply", "--dest=org.a11y.Bus", "/org/a11y/bus",
         "org.a11y.Bus.GetAddress"],
        env=env, capture_output=True, timeout=10, check=False,
    )  # fmt: skip
    return done.returncode == 0 and b"unix:" in done.stdout


@contextlib.contextmanager
def mutter_keyboard(env: dict[str, str]) -> Iterator[None]:
    """A virtual keyboard on headless mutter's seat, as every real GNOME session has.

    Without one mutter gives no window the keyboard focus (and wl-copy says "This seat has
    no keyboard"), so no widget is focused. A remote-desktop session (mutter's own D-Bus
    API, kept while its caller's connection lives) adds the keyboard on its first key.
    """
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    name = "org.gnome.Mutter.RemoteDesktop"
    connection = open_dbus_connection(bus=env["DBUS_SESSION_BUS_ADDRESS"])
    try:
        root = DBusAddress("/org/gnome/Mutter/RemoteDesktop", bus_name=name, interface=name)
        reply = connection.send_and_get_reply(new_method_call(root, "CreateSession"), timeout=5)
        session = DBusAddress(str(reply.body[0]), bus_name=name, interface=f"{name}.Session")
        connection.send_and_get_reply(new_method_call(session, "Start"), timeout=5)
        for pressed in (True, False):  # Shift_L
            press = new_method_call(session, "NotifyKeyboardKeysym", "ub", (0xFFE1, pressed))
            connection.send_and_get_reply(press, timeout=5)
        time.sleep(0.3)
        yield
    finally:
        connection.close()


def qt_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a Qt program that exposes itself without a screen reader running."""
    return {**env, "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1", "QT_ACCESSIBILITY": "1"}


class GtkTarget:
    """A GTK3 window in its own process.

    ``kind``: "editable", "readonly", "ignoring" (editable, drops every insertion), "button".
    """

    def __init__(self, kind: str, workdir: Path, env: dict[str, str]) -> None:
        self.out = workdir / f"gtk-{kind}.txt"
        # Imported here: this file also runs alone, under the system Python, as the target.
        from tests.support.process import start_announcing

        command = [SYSTEM_PYTHON, str(Path(__file__).resolve()), kind, str(self.out)]
        environ = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        self.proc, line = start_announcing(command, environ, "GTK target")
        self.window = line.split()[1] if len(line.split()) > 1 else ""

    def text(self) -> str:
        try:
            return self.out.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def wait_for(self, expected: str, timeout: float = 5.0) -> str:
        from tests.support.waiting import wait_for_text

        return wait_for_text(self.text, expected, timeout, every=0.02)

    def close(self) -> None:
        from tests.support.process import stop_process

        stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _run_gtk(kind: str, out: Path) -> int:  # pragma: no cover - runs in the child
    import gi

    gi.require_version("Gtk", "3.0")
    from gi.repository import GLib, Gtk

    window = Gtk.Window(title=GTK_TITLE)
    window.set_default_size(600, 300)
    window.connect("destroy", Gtk.main_quit)

    def dump(text: str) -> None:
        partial = out.with_suffix(".partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, out)

    focus: Gtk.Widget
    if kind == "button":
        focus = Gtk.Button(label="Press me")
        window.add(focus)
        dump("")
    else:
        view = Gtk.TextView()
        buffer = view.get_buffer()
        if kind == "readonly":
            buffer.set_text("read only")
            view.set_editable(False)
            view.set_cursor_visible(True)
        elif kind == "ignoring":  # says it is editable, drops every insertion
            buffer.connect("insert-text", lambda b, *_: b.stop_emission_by_name("insert-text"))
        buffer.connect(
            "changed", lambda b: dump(b.get_text(b.get_start_iter(), b.get_end_iter(), True))
        )
        dump(buffer.get_text(buffer.get_start_iter(), buffer.get_end_iter(), True))
        window.add(view)
        focus = view

    def ready() -> bool:
        focus.grab_focus()
        window.present()
        gdk_window = window.get_window()
        xid = ""
        if gdk_window is not None and hasattr(gdk_window, "get_xid"):
            xid = str(gdk_window.get_xid())
        print("ready", xid, flush=True)
        return False

    window.show_all()
    GLib.timeout_add(200, ready)
    signal.signal(signal.SIGTERM, lambda *_: GLib.idle_add(Gtk.main_quit))
    Gtk.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(_run_gtk(sys.argv[1], Path(sys.argv[2])))
