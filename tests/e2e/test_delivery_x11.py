"""Delivery that knows where it went, on a real X server (Xvfb) with real Qt windows.

The target window is really closed, or the focus really moved to another window, after
the first piece of text was typed; the clipboard is read back with xclip; a paste is
really killed mid-way in another process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import x11
from tests.support.audio import REPO
from tests.support.outputs import after_first_piece
from tests.support.waiting import steady
from voxtray.choices import PasteChord
from voxtray.desktop import xlib
from voxtray.desktop.session import DesktopSession
from voxtray.output import DeliveryError, FocusTarget, choose_output
from voxtray.output.clipboard import ClipboardOutput
from voxtray.output.delivery import CHUNK_CHARS, chunks
from voxtray.output.target import TargetKind
from voxtray.output.xdotool import XdotoolOutput

pytestmark = pytest.mark.skipif(
    bool(x11.missing_tools()),
    reason=f"needs {', '.join(x11.missing_tools())} (apt-get install xvfb xdotool xclip)",
)

LONG = (
    "This sentence is long enough to need several pieces, so typing checks the target "
    "window between them and stops as soon as it is gone."
)
TYPERS = ["xdotool", "pynput"]
USERS = "user's clipboard — ünïcödé".encode()


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    with x11.x11_session() as name:
        yield name


@pytest.fixture(autouse=True)
def voxtray_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def windows(display: str, tmp_path: Path) -> Iterator[tuple[x11.TargetWindow, ...]]:
    """Two fresh windows: the target (focused) and another one, under the pointer."""
    first = x11.TargetWindow(display, _folder(tmp_path / "a"))
    second = x11.TargetWindow(display, _folder(tmp_path / "b"))
    try:
        x11.xdotool(display, "windowmove", "--sync", second.window, "0", "400")
        x11.xdotool(display, "mousemove", "--window", second.window, "50", "50")
        first.focus()
        yield first, second
    finally:
        first.close()
        second.close()
        x11.xdotool(display, "keyup", "ctrl", "shift", "alt")


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def session(display: str) -> DesktopSession:
    return DesktopSession.from_env(x11.x_env(display))


def xclip_get(display: str) -> bytes | None:
    result = subprocess.run(
        ["xclip", "-selection", "clipboard", "-o", "-t", "UTF8_STRING"],
        capture_output=True,
        env=x11.x_env(display),
        timeout=10,
        check=False,
    )
    return result.stdout if result.returncode == 0 else None


def xclip_set(display: str, data: bytes) -> None:
    subprocess.run(
        ["xclip", "-selection", "clipboard", "-i", "-t", "UTF8_STRING"],
        input=data,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=x11.x_env(display),
        check=True,
        timeout=10,
    )


def processes(display: str, program: str) -> dict[int, str]:
    """`pgrep -f PROGRAM`, limited to processes on this test's display: pid to command line."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if Path(command[0].decode()).name == program and f"DISPLAY={display}".encode() in environ:
            found[int(pid)] = " ".join(part.decode() for part in command if part)
    return found


def xclips(display: str) -> list[str]:
    return list(processes(display, "xclip").values())


def end_xclips(display: str) -> None:
    """End the xclip processes serving this test display's clipboard: it is then empty."""
    for pid in processes(display, "xclip"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while xclips(display) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert xclip_get(display) is None


def wait_gone(display: str, window: int) -> None:
    deadline = time.monotonic() + 5
    with xlib.XDisplay(display) as connection:
        while connection.window_exists(window) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not connection.window_exists(window)


def test_capture_names_the_focused_window(
    windows: tuple[x11.TargetWindow, ...], display: str
) -> None:
    first, second = windows
    target = FocusTarget.capture(session(display))
    assert target.kind is TargetKind.X11_FOCUS
    assert target.ident == int(first.window)
    assert target.description == f'window "{x11.TITLE}" ({int(first.window):#x})'
    assert target.still_focused()
    second.focus()
    assert not target.still_focused()
    assert target.lost() == (
        f"the focus moved from {target.description} to "
        f'window "{x11.TITLE}" ({int(second.window):#x})'
    )


def test_capture_prefers_the_window_managers_active_window(
    windows: tuple[x11.TargetWindow, ...], display: str
) -> None:
    first, second = windows

    def set_active(window: str) -> None:
        subprocess.run(
            ["xprop", "-root", "-f", "_NET_ACTIVE_WINDOW", "32c", "-set", "_NET_ACTIVE_WINDOW",
             str(int(window))],
            env=x11.x_env(display), check=True, timeout=10,
        )  # fmt: skip

    try:
        set_active(second.window)  # the input focus stays on the first window
        target = FocusTarget.capture(session(display))
        assert (target.kind, target.ident) == (TargetKind.X11_ACTIVE, int(second.window))
        set_active(first.window)
        assert "the focus moved" in (target.lost() or "")
    finally:
        subprocess.run(
            ["xprop", "-root", "-remove", "_NET_ACTIVE_WINDOW"],
            env=x11.x_env(display), check=True, timeout=10,
        )  # fmt: skip


def test_focus_on_nothing_is_an_unknown_target(display: str) -> None:
    with xlib.XDisplay(display) as connection:
        root = connection.root()
    x11.xdotool(display, "windowfocus", str(root))
    target = FocusTarget.capture(session(display))
    assert target.kind is TargetKind.UNKNOWN
    assert target.still_focused()


@pytest.mark.parametrize("name", TYPERS)
def test_complete_delivery_names_its_target(
    name: str, windows: tuple[x11.TargetWindow, ...], display: str
) -> None:
    first, second = windows
    target = FocusTarget.capture(session(display))
    delivery = choose_output(name, x11.x_env(display)).deliver(LONG, target)
    assert first.wait_for(LONG) == LONG
    assert delivery.complete
    assert (delivery.typed_text, delivery.to_clipboard_text) == (LONG, "")
    assert delivery.target == target.description
    assert second.text() == ""


@pytest.mark.parametrize("name", TYPERS)
def test_target_closed_mid_typing(
    name: str, windows: tuple[x11.TargetWindow, ...], display: str
) -> None:
    """The rest must not land in the window under the pointer once the target is gone."""
    first, second = windows
    first_piece = chunks(LONG)[0]
    written: list[str] = []

    def close_target() -> None:
        assert first.wait_for(first_piece) == first_piece
        written.append(first.text())
        first.close()
        wait_gone(display, int(first.window))

    target = after_first_piece(FocusTarget.capture(session(display)), close_target)
    delivery = choose_output(name, x11.x_env(display)).deliver(LONG, target)
    assert written == [first_piece]
    assert delivery.typed_text == first_piece
    assert delivery.typed_chars == len(first_piece) <= CHUNK_CHARS
    assert delivery.to_clipboard_text == LONG[len(first_piece) :]
    assert delivery.reason == f"{target.description} was closed"
    assert not delivery.complete
    assert xclip_get(display) == LONG[len(first_piece) :].encode()
    assert steady(lambda: second.text() == "")
    assert "the rest is on the clipboard" in delivery.summary()


@pytest.mark.parametrize("name", TYPERS)
def test_focus_moved_mid_typing(
    name: str, windows: tuple[x11.TargetWindow, ...], display: str
) -> None:
    first, second = windows
    first_piece = chunks(LONG)[0]

    def move_focus() -> None:
        assert first.wait_for(first_piece) == first_piece
        second.focus()

    target = after_first_piece(FocusTarget.capture(session(display)), move_focus)
    delivery = choose_output(name, x11.x_env(display)).deliver(LONG, target)
    assert delivery.typed_text == first_piece
    assert delivery.to_clipboard_text == LONG[len(first_piece) :]
    assert (delivery.reason or "").startswith(f"the focus moved from {target.description} to")
    assert xclip_get(display) == LONG[len(first_piece) :].encode()
    # Nothing after the move: the other window stays empty, the target keeps its piece.
    assert steady(lambda: second.text() == "" and first.text() == first_piece)


def test_focus_moved_before_typing_starts(
    windows: tuple[x11.TargetWindow, ...], display: str
) -> None:
    first, second = windows
    target = FocusTarget.capture(session(display))  # when dictation starts
    second.focus()  # the user switched windows while speaking
    delivery = choose_output("xdotool", x11.x_env(display)).deliver(LONG, target)
    assert (delivery.typed_text, delivery.to_clipboard_text) == ("", LONG)
    assert xclip_get(display) == LONG.encode()
    assert steady(lambda: second.text() == "" and first.text() == "")


def test_clipboard_output_does_not_paste_into_another_window(
    windows: tuple[x11.TargetWindow, ...], display: str
) -> None:
    first, second = windows
    target = FocusTarget.capture(session(display))
    second.focus()
    delivery = ClipboardOutput(x11.x_env(display)).deliver("for the first window", target)
    assert delivery.typed_text == ""
    assert delivery.to_clipboard_text == "for the first window"
    assert xclip_get(display) == b"for the first window"
    assert steady(lambda: second.text() == "" and first.text() == "")


@pytest.mark.parametrize("error", [DeliveryError("xdotool failed: simulated"), RuntimeError("bug")])
@pytest.mark.parametrize("users", [USERS, None])
def test_paste_that_raises_restores_and_leaves_no_xclip(
    error: Exception,
    users: bytes | None,
    windows: tuple[x11.TargetWindow, ...],
    display: str,
    monkeypatch: pytest.MonkeyPatch,
    voxtray_home: Path,
) -> None:
    first, _second = windows
    end_xclips(display)
    if users is not None:
        xclip_set(display, users)

    def broken(self: XdotoolOutput, chord: PasteChord) -> None:
        raise error

    monkeypatch.setattr(XdotoolOutput, "press_paste", broken)
    with pytest.raises(type(error), match=str(error)):
        ClipboardOutput(x11.x_env(display)).deliver("never pasted")
    assert xclip_get(display) == users
    assert first.text() == ""
    # Only the process serving the user's restored clipboard, if there was anything.
    left = xclips(display)
    assert not any("-verbose" in command for command in left)
    assert len(left) == (0 if users is None else 1)
    assert not (voxtray_home / "clipboard-journal.json").exists()


def test_paste_nobody_takes_times_out_and_leaves_no_xclip(display: str, voxtray_home: Path) -> None:
    end_xclips(display)
    with xlib.XDisplay(display) as connection:
        x11.xdotool(display, "windowfocus", str(connection.root()))
    with pytest.raises(DeliveryError, match="did not take the pasted text"):
        ClipboardOutput(x11.x_env(display)).deliver("nobody takes this")
    assert xclip_get(display) is None
    assert xclips(display) == []
    assert not (voxtray_home / "clipboard-journal.json").exists()


_KILLED_PASTE = """
import sys, time
from voxtray.output.clipboard import ClipboardOutput
from voxtray.output.xdotool import XdotoolOutput

def hang(self, chord):
    print("pressing", flush=True)
    time.sleep(60)

XdotoolOutput.press_paste = hang
ClipboardOutput().deliver(sys.argv[1])
"""


def kill_mid_paste(display: str, home: Path, text: str) -> None:
    """A Voxtray process pasting ``text`` is killed (SIGKILL) while pressing ctrl+v."""
    env = {**x11.x_env(display), "VOXTRAY_HOME": str(home)}
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_PASTE, text],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    child.kill()
    child.wait(timeout=10)
    assert line == "pressing\n", child.stderr.read() if child.stderr else ""


def test_killed_paste_is_restored_from_the_journal(
    windows: tuple[x11.TargetWindow, ...], display: str, voxtray_home: Path
) -> None:
    end_xclips(display)
    xclip_set(display, USERS)
    kill_mid_paste(display, voxtray_home, "dictated, then killed")
    journal = voxtray_home / "clipboard-journal.json"
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    assert xclip_get(display) == b"dictated, then killed"
    output = ClipboardOutput(x11.x_env(display))
    assert output.recovered
    assert xclip_get(display) == USERS
    assert not journal.exists()
    deadline = time.monotonic() + 5
    while any("-verbose" in command for command in xclips(display)):
        assert time.monotonic() < deadline, xclips(display)
        time.sleep(0.05)


def test_journal_left_alone_when_the_user_copied_since(
    windows: tuple[x11.TargetWindow, ...], display: str, voxtray_home: Path
) -> None:
    end_xclips(display)
    xclip_set(display, USERS)
    kill_mid_paste(display, voxtray_home, "dictated, then killed")
    xclip_set(display, b"copied after the crash")
    output = ClipboardOutput(x11.x_env(display))
    assert not output.recovered
    assert xclip_get(display) == b"copied after the crash"
    assert not (voxtray_home / "clipboard-journal.json").exists()


def test_a_damaged_journal_is_dropped(display: str, voxtray_home: Path) -> None:
    voxtray_home.mkdir(parents=True, exist_ok=True)
    journal = voxtray_home / "clipboard-journal.json"
    journal.write_text("{not json")
    assert not ClipboardOutput(x11.x_env(display)).recovered
    assert not journal.exists()


def test_typing_helpers_end_with_the_delivery(
    windows: tuple[x11.TargetWindow, ...], display: str
) -> None:
    first, _second = windows
    choose_output("xdotool", x11.x_env(display)).deliver("short")
    assert first.wait_for("short") == "short"
    assert processes(display, "xdotool") == {}
