"""The clipboard itself: read, save, put back, or hand over text (xclip on X11, wl-clipboard
on Wayland).

Content is saved as one type and its bytes: text if offered, or failing that the first MIME
type (an image). Putting content back or handing text over starts a serving process that
outlives Voxtray in a session of its own, as the clipboard must.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from voxtray.desktop import data_control
from voxtray.desktop.session import DesktopSession
from voxtray.output.tools import DeliveryError, run_daemonizing, run_tool

READ_TIMEOUT_S = 2.0
TEXT_TYPE = "text/plain;charset=utf-8"
TEXT_TARGETS = ("UTF8_STRING", TEXT_TYPE, "STRING", "TEXT", "text/plain")


@dataclass(frozen=True)
class Saved:
    """Clipboard content kept aside: one type and its bytes."""

    target: str
    data: bytes


def pick_target(targets: Sequence[str]) -> str | None:
    """The type to keep: text if offered, else the first MIME type (an image)."""
    for target in TEXT_TARGETS:
        if target in targets:
            return target
    return next((target for target in targets if "/" in target), None)


def read(args: Sequence[str], env: Mapping[str, str]) -> bytes | None:
    """A clipboard read: None when there is nothing; an owner that hangs is an error.

    ``wl-paste`` is not run for a selection the compositor reports empty: on KWin it
    would wait for an answer that never comes.
    """
    if args and args[0] == "wl-paste":
        held = data_control.selections(env)
        if held is not None and held.empty(primary="--primary" in args):
            return None
    try:
        result = subprocess.run(
            list(args),
            capture_output=True,
            env=dict(env),
            timeout=READ_TIMEOUT_S,
            check=False,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as exc:
        raise DeliveryError(
            "the clipboard's owner does not answer; not pasting, to keep its content"
        ) from exc
    except OSError as exc:
        raise DeliveryError(f"cannot run {args[0]}: {exc.strerror or exc}") from exc
    return result.stdout if result.returncode == 0 else None


class Clipboard:
    """The session's clipboard, through the command-line tools.

    Args:
        session: Decides between xclip (X11) and wl-clipboard (Wayland).
        env: The environment the tools run in (with a UTF-8 locale).
    """

    def __init__(self, session: DesktopSession, env: Mapping[str, str]) -> None:
        self.session = session
        self.env = dict(env)

    def _xclip(self, *args: str) -> list[str]:
        return ["xclip", "-selection", "clipboard", *args]

    def save(self) -> Saved | None:
        """The content now on the clipboard; None when it is empty."""
        listing: bytes | None
        if self.session.wayland:
            held = data_control.selections(self.env)
            if held is not None:
                listing = "\n".join(held.clipboard or ()).encode("utf-8")
            else:
                listing = read(["wl-paste", "--list-types"], self.env)
        else:
            listing = read(self._xclip("-o", "-t", "TARGETS"), self.env)
        target = pick_target(listing.decode("utf-8", "replace").split()) if listing else None
        if target is None:
            return None
        data = read(self._read_args(target), self.env)
        return None if data is None else Saved(target, data)

    def _read_args(self, target: str) -> list[str]:
        if self.session.wayland:
            return ["wl-paste", "--no-newline", "--type", target]
        return self._xclip("-o", "-t", target)

    def text(self) -> str | None:
        """The clipboard's text now, None when it holds none."""
        data = read(self._read_args(TEXT_TYPE if self.session.wayland else "UTF8_STRING"), self.env)
        return None if data is None else data.decode("utf-8", "replace")

    def restore(self, saved: Saved | None) -> None:
        """Offer saved content again; with None, Wayland's clipboard is cleared (on X11,
        ending the process that offered text empties it)."""
        if saved is None:
            if self.session.wayland:
                run_tool(["wl-copy", "--clear"], env=self.env, timeout=READ_TIMEOUT_S)
            return
        target, data = saved.target, saved.data
        if not self.session.wayland and target in TEXT_TARGETS:
            # Offered back as UTF8_STRING, which every toolkit asks for first.
            if target == "STRING":
                data = data.decode("latin-1").encode("utf-8")
            target = "UTF8_STRING"
        self._offer(target, data)
        if not self._holds(target, data):
            raise DeliveryError("the clipboard did not take its content back")

    def keep(self, text: str) -> None:
        """Put text on the clipboard and leave it there; return once a read gives it back.

        Raises:
            DeliveryError: The tool failed, or the clipboard did not take the text.
        """
        target = TEXT_TYPE if self.session.wayland else "UTF8_STRING"
        data = text.encode("utf-8")
        self._offer(target, data)
        if not self._holds(target, data):
            raise DeliveryError("the clipboard did not take the text")

    def _holds(self, target: str, data: bytes) -> bool:
        """Wait until a read gives ``data`` back.

        The tool returns before its serving child's claim reaches the display server (xclip
        sends it only when it first waits for events): a claim that lands later would take
        the clipboard from whoever owns it by then.
        """
        deadline = time.monotonic() + READ_TIMEOUT_S
        while read(self._read_args(target), self.env) != data:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def _offer(self, target: str, data: bytes) -> None:
        if self.session.wayland:
            args = ["wl-copy", "--type", target]
        else:
            args = self._xclip("-i", "-t", target)
        run_daemonizing(args, env=self.env, timeout=READ_TIMEOUT_S, stdin=data)
