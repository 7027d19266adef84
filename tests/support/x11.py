"""A real X desktop for the output tests: an Xvfb server and a Qt text window to type into.

Run as a script (``python tests/support/x11.py OUT CONTROL``) it is the target window: a
QTextEdit that writes its text to OUT after every change and clears itself whenever the
file CONTROL appears.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TITLE = "voxtray-output-target"


class XServer:
    """An Xvfb server on a free display number, picked by Xvfb itself (-displayfd)."""

    def __init__(self) -> None:
        read_end, write_end = os.pipe()
        self.proc = subprocess.Popen(
            [
                "Xvfb",
                "-displayfd",
                str(write_end),
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ],
            pass_fds=(write_end,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_end)
        try:
            number = _read_line(read_end, timeout=20.0)
        finally:
            os.close(read_end)
        if not number.strip().isdigit():
            self.stop()
            raise RuntimeError("Xvfb did not report a display number")
        self.name = f":{number.strip()}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _read_line(fd: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 64)
        if not chunk:
            break
        data += chunk
    return data.decode()


def x_env(display: str) -> dict[str, str]:
    """The environment for a program on the test display (and not on Wayland)."""
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "XAUTHORITY")}
    env.update(DISPLAY=display, XDG_SESSION_TYPE="x11", QT_QPA_PLATFORM="xcb")
    return env


def xdotool(display: str, *args: str) -> str:
    result = subprocess.run(
        ["xdotool", *args],
        env=x_env(display),
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return result.stdout.strip()


class TargetWindow:
    """The Qt text window, in its own process, and what it shows."""

    def __init__(self, display: str, workdir: Path, env: dict[str, str] | None = None) -> None:
        self.display = display
        self.out = workdir / "target.txt"
        self.control = workdir / "target.clear"
        # Imported here: this file also runs alone, as the window itself.
        from tests.support.process import start_announcing

        command = [sys.executable, str(Path(__file__).resolve()), str(self.out), str(self.control)]
        self.proc, line = start_announcing(
            command, x_env(display) if env is None else env, "target window", ready="ready "
        )
        self.window = line.split()[1]

    def focus(self) -> None:
        xdotool(self.display, "windowfocus", "--sync", self.window)

    def text(self) -> str:
        try:
            return self.out.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def clear(self) -> None:
        self.control.touch()
        self.wait_for("")
        deadline = time.monotonic() + 5
        while self.control.exists() and time.monotonic() < deadline:
            time.sleep(0.02)

    def wait_for(self, expected: str, timeout: float = 5.0, steady: float = 0.3) -> str:
        """Wait until the window shows ``expected`` and keeps showing it for ``steady`` s.

        Returns:
            What the window shows at the end (``expected`` unless it timed out).
        """
        from tests.support.waiting import steady as holds
        from tests.support.waiting import wait_for

        def shown() -> bool:
            return self.text() == expected

        try:
            wait_for(lambda: shown() and holds(shown, steady), timeout, every=0.02)
        except AssertionError:
            return self.text()
        return expected

    def close(self) -> None:
        from tests.support.process import stop_process

        stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def missing_tools() -> list[str]:
    return [tool for tool in ("Xvfb", "xdotool", "xclip") if shutil.which(tool) is None]


@contextlib.contextmanager
def environ(**values: str | None) -> Iterator[None]:
    """Set (or with None remove) variables of this process for a while."""
    saved = {key: os.environ.get(key) for key in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _run_target(out: Path, control: Path) -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QTextEdit

    app = QApplication([])
    edit = QTextEdit()
    edit.setWindowTitle(TITLE)
    edit.resize(700, 300)

    def dump() -> None:
        partial = out.with_suffix(".partial")
        partial.write_text(edit.toPlainText(), encoding="utf-8")
        os.replace(partial, out)

    def poll() -> None:
        if control.exists():
            edit.clear()
            dump()
            control.unlink()

    edit.textChanged.connect(dump)
    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(20)
    edit.show()
    dump()
    print("ready", int(edit.winId()), flush=True)
    return app.exec()


if __name__ == "__main__":
    raise SystemExit(_run_target(Path(sys.argv[1]), Path(sys.argv[2])))


def start_tray(display: str) -> subprocess.Popen[bytes]:
    """A real system tray (trayer's panel) at the top right of the display."""
    return subprocess.Popen(
        ["trayer", "--edge", "top", "--align", "right", "--widthtype", "request",
         "--height", "32", "--iconspacing", "4", "--transparent", "false", "--tint", "0x202020"],
        env=x_env(display),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


def windows(display: str, *query: str) -> dict[str, dict[str, int]]:
    """Window id -> geometry (X, Y, WIDTH, HEIGHT) for an `xdotool search` query."""
    done = subprocess.run(
        ["xdotool", "search", *query], env=x_env(display), capture_output=True, text=True
    )
    found = {}
    for window in done.stdout.split():
        shell = xdotool(display, "getwindowgeometry", "--shell", window)
        found[window] = {k: int(v) for k, v in (line.split("=") for line in shell.splitlines())}
    return found


def tray_panel(display: str) -> dict[str, int] | None:
    """The trayer panel: the largest of trayer's windows (the others are 10x10 helpers)."""
    panels = windows(display, "--class", "trayer")
    if not panels:
        return None
    return max(panels.values(), key=lambda g: g["WIDTH"] * g["HEIGHT"])


@contextlib.contextmanager
def x11_session() -> Iterator[str]:
    """A fresh Xvfb display with this process's environment set as an X11 session's (no
    Wayland, no XAUTHORITY); yields the display name, stops the server after."""
    server = XServer()
    try:
        with environ(
            DISPLAY=server.name, WAYLAND_DISPLAY=None, XDG_SESSION_TYPE="x11", XAUTHORITY=None
        ):
            yield server.name
    finally:
        server.stop()


@pytest.fixture(scope="module")
def x_display() -> Iterator[str]:
    """A private Xvfb on a free display number, with DISPLAY pointing at it."""
    missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (Debian: apt-get install xvfb xdotool)")
    if importlib.util.find_spec("pynput") is None:  # importing it needs the display first
        pytest.skip("pynput is not installed")
    read_fd, write_fd = os.pipe()
    # -displayfd makes Xvfb pick a free display itself and write its number when ready;
    # -noreset stops it resetting whenever its last client leaves, which refuses the
    # connections that arrive meanwhile.
    command = ["Xvfb", "-displayfd", str(write_fd), "-noreset", "-nolisten", "tcp"]
    server = subprocess.Popen(
        [*command, "-screen", "0", "640x480x24"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    try:
        ready, _, _ = select.select([read_fd], [], [], 15)
        number = os.read(read_fd, 64).decode().strip() if ready else ""
        assert number, f"Xvfb did not start (exit code {server.poll()})"
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DISPLAY", f":{number}")
            patch.delenv("WAYLAND_DISPLAY", raising=False)
            yield f":{number}"
    finally:
        os.close(read_fd)
        server.terminate()
        server.wait(10)


@contextlib.contextmanager
def grabbed_by_another_client(x_display: str, key: str) -> Iterator[None]:
    """Another X client holds an XGrabKey on ctrl+alt+`key` for the duration."""
    display, x, xk = (importlib.import_module(f"Xlib.{name}") for name in ("display", "X", "XK"))
    other = display.Display(x_display)
    keycode = other.keysym_to_keycode(xk.string_to_keysym(key))
    root = other.screen().root
    mask = x.ControlMask | x.Mod1Mask
    root.grab_key(keycode, mask, True, x.GrabModeAsync, x.GrabModeAsync)
    other.sync()
    try:
        yield
    finally:
        root.ungrab_key(keycode, mask)
        other.sync()
        other.close()


def xclip_get(display: str, target: str = "UTF8_STRING") -> bytes | None:
    result = subprocess.run(
        ["xclip", "-selection", "clipboard", "-o", "-t", target],
        capture_output=True,
        env=x_env(display),
        timeout=10,
        check=False,
    )
    return result.stdout if result.returncode == 0 else None


@pytest.fixture(scope="module")
def desktop() -> Iterator[str]:
    missing = missing_tools() + [t for t in ("trayer",) if shutil.which(t) is None]
    if missing:
        pytest.skip(
            f"no desktop tools ({', '.join(missing)}): apt-get install xvfb xdotool xclip trayer"
        )
    server = XServer()
    tray = start_tray(server.name)
    try:
        # Imported here: this file also runs alone, as the target window.
        from tests.support.waiting import wait_for

        wait_for(lambda: tray_panel(server.name) is not None, 15, "trayer did not start")
        yield server.name
    finally:
        tray.terminate()
        tray.wait(timeout=5)
        server.stop()
