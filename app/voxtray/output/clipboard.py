"""Paste through the clipboard, then put the user's clipboard back.

For text a keyboard backend cannot type (ydotool and non-ASCII) or applications that drop
synthetic keys. The clipboard content is saved first (`selection`), noted in a journal in
case Voxtray dies mid-paste (`clipboard_note`), the dictated text is offered by a process in a
group of its own, ctrl+v is pressed, and in a ``finally`` the saved content is offered
again, the offering process is ended and reaped, and the note is deleted. An empty
clipboard is left empty. A note left by a paste that never finished is acted on when the
next `ClipboardOutput` is made.

On X11 the paste is observed rather than guessed: ``xclip -verbose`` reports every request
it serves, so the restore waits until the focused window has fetched the text (TARGETS
queries are not counted), and a window that never asks is reported as a failure. Wayland
has no such report; the restore there follows ``WAYLAND_PASTE_SETTLE_S`` after the keys.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from voxtray.choices import OutputMethod, PasteChord
from voxtray.desktop.data_control import MANAGER as DATA_CONTROL
from voxtray.desktop.session import DisplayServer
from voxtray.desktop.wayland_wire import Connection, WireError
from voxtray.errors import first_line
from voxtray.output import clipboard_note
from voxtray.output.base import DeliveryError, KeyPresser, OutputBase, PasteKeys
from voxtray.output.delivery import Delivery, stopped
from voxtray.output.pynput_typer import PynputOutput
from voxtray.output.selection import READ_TIMEOUT_S, TEXT_TYPE, Clipboard, pick_target, read
from voxtray.output.target import FocusTarget
from voxtray.output.tools import end_group
from voxtray.output.wtype import WtypeOutput
from voxtray.output.xdotool import XdotoolOutput
from voxtray.output.ydotool import YdotoolOutput

__all__ = ["PASTE_WAIT_S", "WAYLAND_PASTE_SETTLE_S", "ClipboardOutput", "pick_target"]

log = logging.getLogger(__name__)

PASTE_WAIT_S = 2.0
"""X11: how long the focused window has to fetch the pasted text."""

WAYLAND_PASTE_SETTLE_S = 0.3
"""Wayland: how long after ctrl+v the pasted text is left on the clipboard."""

WAYLAND_FOCUS_SETTLE_S = 0.05
"""Wayland: the pause after the clipboard tools are gone, before the next key. On mutter
wl-clipboard takes the focus for a moment; keys sent before the compositor has handed it
back reach the tool's vanished window (measured in CI under load: 11 characters lost)."""

_X11_SENDERS = (OutputMethod.XDOTOOL, OutputMethod.PYNPUT)
_WAYLAND_SENDERS = (OutputMethod.WTYPE, OutputMethod.YDOTOOL)
_SENDER_TYPES: dict[OutputMethod, Callable[[Mapping[str, str], str], PasteKeys]] = {
    OutputMethod.XDOTOOL: XdotoolOutput,
    OutputMethod.PYNPUT: PynputOutput,
    OutputMethod.WTYPE: WtypeOutput,
    OutputMethod.YDOTOOL: YdotoolOutput,
}


class ClipboardOutput(OutputBase):
    """Set the clipboard, press ctrl+v, restore the clipboard (X11 and Wayland).

    Args:
        env: The environment to judge and to run the tools in; os.environ if None.
        platform: ``sys.platform`` if None.
        paste_keys: The backend that presses ctrl+v (xdotool or pynput on X11, wtype or
            ydotool on Wayland); the first available for the session if None.
        journal_file: Where a paste notes the user's clipboard; in the data folder if None.
            A note left there by a paste that never finished is acted on here.
    """

    name = OutputMethod.CLIPBOARD

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        platform: str | None = None,
        paste_keys: OutputMethod | str | None = None,
        journal_file: Path | None = None,
    ) -> None:
        super().__init__(env, platform)
        self.paste_keys = None if paste_keys is None else OutputMethod(paste_keys)
        self.paste_chord: PasteChord | None = None
        """The keys that paste; None: the backend's own (ctrl+v; shift+Insert by the portal)."""
        self.journal_file = clipboard_note.journal_path() if journal_file is None else journal_file
        self.recovered = self._recover()
        """Whether making this output put back a clipboard a dead paste had borrowed."""

    def _recover(self) -> bool:
        # Making an output never fails: a journal that cannot be acted on waits.
        try:
            if not self.journal_file.exists() or self._tools_problem() is not None:
                return False
            return clipboard_note.recover(self.journal_file, self.clipboard())
        except (DeliveryError, OSError) as exc:
            log.warning("cannot act on the clipboard journal: %s", exc)
            return False

    def clipboard(self) -> Clipboard:
        return Clipboard(self.session, self.tool_env())

    def problem(self) -> str | None:
        return self._tools_problem() or self._sender_problem()

    def _tools_problem(self) -> str | None:
        server = self.session.server
        if server in (DisplayServer.WINDOWS, DisplayServer.MACOS):
            return "clipboard pasting is implemented for X11 and Wayland only"
        if server is DisplayServer.WAYLAND:
            if not self.session.wayland_display:
                return "clipboard pasting on Wayland needs WAYLAND_DISPLAY"
            for tool in ("wl-copy", "wl-paste"):
                if not self._which(tool):
                    return f"{tool} not found: sudo apt-get install wl-clipboard"
            return None
        if server is DisplayServer.X11:
            return None if self._which("xclip") else "xclip not found: sudo apt-get install xclip"
        return "clipboard pasting needs an X11 or Wayland session"

    def _which(self, tool: str) -> bool:
        return shutil.which(tool, path=self.env.get("PATH")) is not None

    def senders(self) -> list[PasteKeys]:
        """What may press ctrl+v on this session, in the order tried."""
        names: tuple[OutputMethod, ...] = _WAYLAND_SENDERS if self.session.wayland else _X11_SENDERS
        if self.paste_keys is not None:
            names = (self.paste_keys,) if self.paste_keys in names else ()
        return [_SENDER_TYPES[name](self.env, self.platform) for name in names]

    def _sender_problem(self) -> str | None:
        reasons = []
        for sender in self.senders():
            reason = sender.problem()
            if reason is None:
                return None
            reasons.append(reason)
        return "nothing can press ctrl+v: " + ("; ".join(reasons) or "no backend for it")

    def _sender(self) -> PasteKeys:
        for sender in self.senders():
            if sender.problem() is None:
                return sender
        raise DeliveryError(self.problem() or "nothing can press ctrl+v")

    def _press_paste(self) -> Callable[[], None]:
        sender, chord = self._sender(), self.paste_chord or PasteChord.CTRL_V
        return lambda: sender.press_paste(chord)

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times through the backend that presses ctrl+v."""
        sender = self._sender()
        if not isinstance(sender, KeyPresser):
            raise DeliveryError("the key backend here cannot press other keys")
        sender.press_key(name, count)

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        press = self._press_paste()
        reason = target.lost()
        if reason is not None:
            return stopped(text, 0, target, reason, self.spill, str(self.name))
        clipboard = self.clipboard()
        saved = clipboard.save()
        note = clipboard_note.write(self.journal_file, self.session, saved, text)
        offer: _Offer
        if self.session.wayland:
            offer = _WlCopyOffer(self.tool_env())
        else:
            offer = _XclipOffer(self.tool_env())
        restored = False
        try:
            offer.start(text)
            clipboard_note.add_helper(self.journal_file, note, offer.pid)
            self._paste(offer, press)
        finally:
            try:
                clipboard.restore(saved)
                restored = True
            finally:
                # Restoring took the clipboard over, which ends the offer by itself; with
                # nothing to restore, ending it is what empties the clipboard again.
                offer.stop(grace_s=0.5 if saved is not None else 0.0)
                if restored:
                    clipboard_note.clear(self.journal_file)
                if self.session.wayland:
                    settle_focus(self.tool_env())
        return Delivery(text, text, target.description, str(self.name))

    def _paste(self, offer: _Offer, press: Callable[[], None]) -> None:
        served = offer.served()
        if self.session.wayland:  # wl-paste's check took the focus on mutter: back first
            settle_focus(self.tool_env())
        press()
        if self.session.wayland:
            time.sleep(WAYLAND_PASTE_SETTLE_S)
        elif not offer.wait_served(served + 1, PASTE_WAIT_S):
            raise DeliveryError(
                f"the focused window did not take the pasted text within {PASTE_WAIT_S:g} s"
            )


class _Offer:
    """A process offering the dictated text on the clipboard, in a group of its own."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        return 0 if self._proc is None else self._proc.pid

    def _spawn(self, args: list[str], stderr: int) -> subprocess.Popen[bytes]:
        try:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=self._env,
                start_new_session=True,
                # SIGPIPE stays ignored, as in Python: if Voxtray dies, the report pipe
                # breaks and the offer must go on serving until the journal is acted on.
                restore_signals=False,
            )
        except OSError as exc:
            raise DeliveryError(f"cannot run {args[0]}: {exc.strerror or exc}") from exc
        return self._proc

    def start(self, text: str) -> None:
        """Own the clipboard with the text; return once a read gives it back."""
        raise NotImplementedError

    def served(self) -> int:
        """Data requests served so far; 0 where the tool does not tell."""
        return 0

    def wait_served(self, count: int, timeout: float) -> bool:
        """Wait until ``count`` requests were served; True where the tool does not tell."""
        return True

    def _confirm(self, text: str, args: list[str]) -> None:
        # The tool announces itself before the server has processed its claim (xclip sends
        # it only when it first waits for events): until then the previous owner answers.
        # Reading the clipboard back proves the claim and that a paste gets this text.
        deadline = time.monotonic() + READ_TIMEOUT_S
        while True:
            got = read(args, self._env)
            if got is not None and got.decode("utf-8", "replace") == text:
                return
            if time.monotonic() > deadline or self._exited():
                raise DeliveryError("the clipboard did not take the text (another program owns it)")
            time.sleep(0.005)  # the claim lands within a few ms; each poll is a short read

    def _exited(self) -> bool:
        return self._proc is None or self._proc.poll() is not None

    def stop(self, grace_s: float) -> None:
        """End the process and its group, after ``grace_s`` to exit by itself; reap it."""
        if self._proc is not None:
            end_group(self._proc, grace_s)


WL_COPY_TRIES = 5
"""On mutter, wl-copy takes the focus for a moment to set the selection; when the focus
moves back first, mutter cancels its offer and wl-copy exits at once (measured under load:
83 ms, exit 0, the clipboard empty). It is tried again then."""


class _WlCopyOffer(_Offer):
    """``wl-copy --foreground``: it stays our child instead of forking a server."""

    def start(self, text: str) -> None:
        for attempt in range(1, WL_COPY_TRIES + 1):
            proc = self._spawn(["wl-copy", "--foreground", "--type", TEXT_TYPE], subprocess.DEVNULL)
            assert proc.stdin is not None
            try:
                proc.stdin.write(text.encode("utf-8"))
                proc.stdin.close()
            except OSError as exc:
                raise DeliveryError("wl-copy could not take the clipboard") from exc
            try:
                self._confirm(text, ["wl-paste", "--no-newline", "--type", TEXT_TYPE])
            except DeliveryError:
                if attempt == WL_COPY_TRIES or not self._exited():
                    raise
                log.info("wl-copy lost the clipboard at once (try %d); trying again", attempt)
                continue
            return


class _XclipOffer(_Offer):
    """``xclip -i -verbose`` in the foreground, counting the requests it has served."""

    def __init__(self, env: Mapping[str, str]) -> None:
        super().__init__(env)
        self._waiting = 0
        self._changed = threading.Condition()
        self._errors: list[str] = []

    def start(self, text: str) -> None:
        """Own the clipboard with the text; return once the X server says so."""
        args = ["xclip", "-selection", "clipboard", "-i", "-verbose", "-t", "UTF8_STRING"]
        proc = self._spawn(args, subprocess.PIPE)
        stdin, stderr = proc.stdin, proc.stderr
        assert stdin is not None
        assert stderr is not None
        threading.Thread(target=self._follow, args=(stderr,), daemon=True).start()
        try:
            stdin.write(text.encode("utf-8"))
            stdin.close()
        except OSError as exc:  # xclip died at once, e.g. no X server
            raise DeliveryError(f"xclip could not take the clipboard: {self._reason()}") from exc
        if not self.wait_served(0, READ_TIMEOUT_S):
            raise DeliveryError(f"xclip could not take the clipboard: {self._reason()}")
        self._confirm(text, ["xclip", "-selection", "clipboard", "-o", "-t", "UTF8_STRING"])
        # That read was a served request too: count it before the paste is counted.
        self.wait_served(1, READ_TIMEOUT_S)

    def _follow(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").strip()
            with self._changed:
                if "selection request number" in line:
                    self._waiting += 1
                elif line and not line.startswith(("Connected", "Using", "Waiting")):
                    self._errors.append(line)
                self._changed.notify_all()
        with self._changed:
            self._waiting = -1 if self._waiting == 0 else self._waiting
            self._changed.notify_all()

    def served(self) -> int:
        """Data requests served so far (TARGETS queries are not counted by xclip)."""
        with self._changed:
            return max(self._waiting - 1, 0)

    def wait_served(self, count: int, timeout: float) -> bool:
        """Wait until ``count`` requests were served; ``count`` 0 waits for xclip to start."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._waiting - 1 < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._waiting < 0 or self._exited():
                    return False
                self._changed.wait(min(left, 0.05))
            return True

    def _reason(self) -> str:
        with self._changed:
            errors = list(self._errors)
        return first_line("\n".join(errors)) or "no answer from xclip"


def settle_focus(env: Mapping[str, str]) -> None:
    """Return once the compositor has dealt with the clipboard tools' exits, so that the
    focus is back where the user left it before another key is sent.

    Only where the tools took the focus: a compositor without data-control (mutter). Two
    round trips (connecting makes the first): the second is answered only after a whole turn
    of the compositor's loop that began once the tools had already gone.
    """
    with contextlib.suppress(WireError):
        connection = Connection(env)
        try:
            if DATA_CONTROL in connection.globals:  # wl-clipboard took no focus here
                return
            connection.roundtrip()
        finally:
            connection.close()
    time.sleep(WAYLAND_FOCUS_SETTLE_S)


def recover_clipboard(env: Mapping[str, str] | None = None) -> bool:
    """At start-up: put back a clipboard that a paste killed mid-way had borrowed.

    Whatever output is chosen; True if something was put back. Never raises.
    """
    return ClipboardOutput(env).recovered
