"""Paste through the clipboard, then put the user's clipboard back.

For text a keyboard backend cannot type (ydotool and non-ASCII) or applications that drop
synthetic keys. The clipboard content is saved first (text, or failing that its first
MIME type, such as an image), the dictated text is offered, ctrl+v is pressed, and the
saved content is offered again in a ``finally``. An empty clipboard is left empty.

On X11 the paste is observed rather than guessed: ``xclip -verbose`` reports every request
it serves, so the restore waits until the focused window has fetched the text (TARGETS
queries are not counted), and a window that never asks is reported as a failure. Wayland
has no such report; the restore there follows ``WAYLAND_PASTE_SETTLE_S`` after the keys.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from app.choices import OutputMethod
from app.desktop.session import DisplayServer
from app.errors import first_line
from app.output.base import DeliveryError, OutputBase, PasteKeys, run_daemonizing, run_tool
from app.output.pynput_typer import PynputOutput
from app.output.wtype import WtypeOutput
from app.output.xdotool import XdotoolOutput
from app.output.ydotool import YdotoolOutput

PASTE_WAIT_S = 2.0
"""X11: how long the focused window has to fetch the pasted text."""

WAYLAND_PASTE_SETTLE_S = 0.3
"""Wayland: how long after ctrl+v the pasted text is left on the clipboard."""

_READ_TIMEOUT_S = 2.0
_TEXT_TYPE = "text/plain;charset=utf-8"
_TEXT_TARGETS = ("UTF8_STRING", _TEXT_TYPE, "STRING", "TEXT", "text/plain")
_X11_SENDERS = (OutputMethod.XDOTOOL, OutputMethod.PYNPUT)
_WAYLAND_SENDERS = (OutputMethod.WTYPE, OutputMethod.YDOTOOL)
_SENDER_TYPES: dict[OutputMethod, Callable[[Mapping[str, str], str], PasteKeys]] = {
    OutputMethod.XDOTOOL: XdotoolOutput,
    OutputMethod.PYNPUT: PynputOutput,
    OutputMethod.WTYPE: WtypeOutput,
    OutputMethod.YDOTOOL: YdotoolOutput,
}


@dataclass(frozen=True)
class Saved:
    """Clipboard content kept aside: one type and its bytes."""

    target: str
    data: bytes


def pick_target(targets: Sequence[str]) -> str | None:
    """The type to keep: text if offered, else the first MIME type (an image)."""
    for target in _TEXT_TARGETS:
        if target in targets:
            return target
    return next((target for target in targets if "/" in target), None)


def _read(args: Sequence[str], env: Mapping[str, str]) -> bytes | None:
    """A clipboard read: None when there is nothing; an owner that hangs is an error."""
    try:
        result = subprocess.run(
            list(args), capture_output=True, env=dict(env), timeout=_READ_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise DeliveryError(
            "the clipboard's owner does not answer; not pasting, to keep its content"
        ) from exc
    except OSError as exc:
        raise DeliveryError(f"cannot run {args[0]}: {exc.strerror or exc}") from exc
    return result.stdout if result.returncode == 0 else None


class ClipboardOutput(OutputBase):
    """Set the clipboard, press ctrl+v, restore the clipboard (X11 and Wayland).

    Args:
        env: The environment to judge and to run the tools in; os.environ if None.
        platform: ``sys.platform`` if None.
        paste_keys: The backend that presses ctrl+v (xdotool or pynput on X11, wtype or
            ydotool on Wayland); the first available for the session if None.
    """

    name = OutputMethod.CLIPBOARD

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        platform: str | None = None,
        paste_keys: OutputMethod | str | None = None,
    ) -> None:
        super().__init__(env, platform)
        self.paste_keys = None if paste_keys is None else OutputMethod(paste_keys)

    def problem(self) -> str | None:
        server = self.session.server
        if server in (DisplayServer.WINDOWS, DisplayServer.MACOS):
            return "clipboard pasting is implemented for X11 and Wayland only"
        if server is DisplayServer.WAYLAND:
            return self._wayland_problem()
        if server is DisplayServer.X11:
            return self._x11_problem()
        return "clipboard pasting needs an X11 or Wayland session"

    def _which(self, tool: str) -> bool:
        return shutil.which(tool, path=self.env.get("PATH")) is not None

    def _x11_problem(self) -> str | None:
        if not self._which("xclip"):
            return "xclip not found: sudo apt-get install xclip"
        return self._sender_problem()

    def _wayland_problem(self) -> str | None:
        if not self.session.wayland_display:
            return "clipboard pasting on Wayland needs WAYLAND_DISPLAY"
        for tool in ("wl-copy", "wl-paste"):
            if not self._which(tool):
                return f"{tool} not found: sudo apt-get install wl-clipboard"
        return self._sender_problem()

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

    def _press_paste(self) -> Callable[[], None]:
        for sender in self.senders():
            if sender.problem() is None:
                return sender.press_paste
        raise DeliveryError(self.problem() or "nothing can press ctrl+v")

    def deliver(self, text: str) -> None:
        if not text:
            return
        self._require()
        press = self._press_paste()
        if self.session.wayland:
            self._deliver_wayland(text, press)
        else:
            self._deliver_x11(text, press)

    # X11

    def _deliver_x11(self, text: str, press: Callable[[], None]) -> None:
        saved = self._x11_save()
        offer = _XclipOffer(text.encode("utf-8"), self.tool_env())
        try:
            offer.start(text)
            served = offer.served()
            press()
            taken = offer.wait_served(served + 1, PASTE_WAIT_S)
        finally:
            try:
                self._x11_restore(saved)
            finally:
                # Restoring took the clipboard over, which ends xclip; with nothing to
                # restore, ending xclip is what empties the clipboard again.
                offer.stop(wait=saved is not None)
        if not taken:
            raise DeliveryError(
                f"the focused window did not take the pasted text within {PASTE_WAIT_S:g} s"
            )

    def _xclip(self, *args: str) -> list[str]:
        return ["xclip", "-selection", "clipboard", *args]

    def _x11_save(self) -> Saved | None:
        env = self.tool_env()
        listing = _read(self._xclip("-o", "-t", "TARGETS"), env)
        target = pick_target(listing.decode("utf-8", "replace").split()) if listing else None
        if target is None:
            return None
        data = _read(self._xclip("-o", "-t", target), env)
        return None if data is None else Saved(target, data)

    def _x11_restore(self, saved: Saved | None) -> None:
        # Nothing saved: stopping our xclip leaves the clipboard without an owner, empty.
        if saved is None:
            return
        target, data = saved.target, saved.data
        if target in _TEXT_TARGETS:
            # Offered back as UTF8_STRING, which every toolkit asks for first.
            if target == "STRING":
                data = data.decode("latin-1").encode("utf-8")
            target = "UTF8_STRING"
        run_daemonizing(
            self._xclip("-i", "-t", target),
            env=self.tool_env(),
            timeout=_READ_TIMEOUT_S,
            stdin=data,
        )

    # Wayland

    def _deliver_wayland(self, text: str, press: Callable[[], None]) -> None:
        saved = self._wayland_save()
        try:
            run_daemonizing(
                ["wl-copy", "--type", _TEXT_TYPE],
                env=self.tool_env(),
                timeout=_READ_TIMEOUT_S,
                stdin=text.encode("utf-8"),
            )
            press()
            time.sleep(WAYLAND_PASTE_SETTLE_S)
        finally:
            self._wayland_restore(saved)

    def _wayland_save(self) -> Saved | None:
        env = self.tool_env()
        listing = _read(["wl-paste", "--list-types"], env)
        target = pick_target(listing.decode("utf-8", "replace").split()) if listing else None
        if target is None:
            return None
        data = _read(["wl-paste", "--no-newline", "--type", target], env)
        return None if data is None else Saved(target, data)

    def _wayland_restore(self, saved: Saved | None) -> None:
        env = self.tool_env()
        if saved is None:
            run_tool(["wl-copy", "--clear"], env=env, timeout=_READ_TIMEOUT_S)
            return
        run_daemonizing(
            ["wl-copy", "--type", saved.target],
            env=env,
            timeout=_READ_TIMEOUT_S,
            stdin=saved.data,
        )


class _XclipOffer:
    """``xclip -i -verbose`` in the foreground, counting the requests it has served."""

    def __init__(self, data: bytes, env: Mapping[str, str]) -> None:
        self._data = data
        self._env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None
        self._waiting = 0
        self._changed = threading.Condition()
        self._errors: list[str] = []

    def start(self, text: str) -> None:
        """Own the clipboard with the text; return once the X server says so."""
        args = ["xclip", "-selection", "clipboard", "-i", "-verbose", "-t", "UTF8_STRING"]
        try:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=self._env,
            )
        except OSError as exc:
            raise DeliveryError(f"cannot run xclip: {exc.strerror or exc}") from exc
        stdin, stderr = self._proc.stdin, self._proc.stderr
        assert stdin is not None
        assert stderr is not None
        threading.Thread(target=self._follow, args=(stderr,), daemon=True).start()
        try:
            stdin.write(self._data)
            stdin.close()
        except OSError as exc:  # xclip died at once, e.g. no X server
            raise DeliveryError(f"xclip could not take the clipboard: {self._reason()}") from exc
        if not self.wait_served(0, _READ_TIMEOUT_S):
            raise DeliveryError(f"xclip could not take the clipboard: {self._reason()}")
        # xclip announces itself before the server has processed its claim; reading the
        # clipboard back proves the claim and that the text is what a paste will get.
        got = _read(["xclip", "-selection", "clipboard", "-o", "-t", "UTF8_STRING"], self._env)
        if got is None or got.decode("utf-8", "replace") != text:
            raise DeliveryError("the clipboard did not take the text (another program owns it)")
        # That read was a served request too: count it before the paste is counted.
        self.wait_served(1, _READ_TIMEOUT_S)

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

    def _exited(self) -> bool:
        return self._proc is None or self._proc.poll() is not None

    def _reason(self) -> str:
        with self._changed:
            errors = list(self._errors)
        return first_line("\n".join(errors)) or "no answer from xclip"

    def stop(self, wait: bool) -> None:
        """End xclip, after giving it a moment to exit by itself if ``wait``."""
        if self._proc is None:
            return
        try:
            self._proc.wait(timeout=0.5 if wait else 0)
        except subprocess.TimeoutExpired:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
