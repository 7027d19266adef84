"""What every text output offers, the error it raises, and what the backends share.

A backend is cheap to construct and never fails doing so: whether it can work is asked with
``available()`` (and ``problem()`` says why not, with the fix), so the chooser and the
diagnostics page can probe every backend without side effects (save one: making a
`ClipboardOutput` puts back a clipboard that a killed paste had borrowed).
"""

from __future__ import annotations

import abc
import os
import sys
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from voxtray.choices import OutputMethod, PasteChord
from voxtray.desktop.session import DesktopSession
from voxtray.output import selection
from voxtray.output.delivery import Delivery, type_in_chunks
from voxtray.output.target import FocusTarget
from voxtray.output.tools import DeliveryError, run_daemonizing, run_tool, typing_timeout

__all__ = [
    "Delivery",
    "DeliveryError",
    "FocusTarget",
    "KeyPresser",
    "OutputBase",
    "PasteKeys",
    "TextOutput",
    "check_key",
    "run_daemonizing",
    "run_tool",
    "typing_timeout",
]

# Tools read UTF-8 text through the C library's multibyte functions (xdotool, wtype), which
# only decode non-ASCII under a UTF-8 locale; C.UTF-8 exists on every current glibc.
_UTF8_LOCALE = "C.UTF-8"


@runtime_checkable
class TextOutput(Protocol):
    """Something that puts text into the focused window.

    Attributes:
        name: The setting value that names it.
    """

    name: OutputMethod

    def available(self) -> bool:
        """Whether this backend can work on this desktop right now."""
        ...

    def problem(self) -> str | None:
        """Why the backend cannot work, with what to install or start; None if it can."""
        ...

    def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
        """Type ``text`` into ``target``, the window focused when dictation started.

        Args:
            text: The text.
            target: The window it is meant for; None takes the one focused now. Typing
                stops when it closes or loses the focus, and the rest goes to the
                clipboard.

        Returns:
            What reached the target and what went to the clipboard instead.

        Raises:
            DeliveryError: The text could not be delivered; the message says why.
        """
        ...


@runtime_checkable
class PasteKeys(Protocol):
    """Something that presses ctrl+v in the focused window, for the clipboard backend."""

    name: OutputMethod

    def problem(self) -> str | None:
        """Why it cannot press keys here, with the fix; None if it can."""
        ...

    def press_paste(self, chord: PasteChord = PasteChord.CTRL_V) -> None:
        """Press ``chord`` once the user's modifiers are up.

        Raises:
            DeliveryError: The keys could not be pressed; the message says why.
        """
        ...


@runtime_checkable
class Closable(Protocol):
    """An output that holds something open until closed (the portal's remote-control
    session, which the desktop shows as in use)."""

    def close(self) -> None: ...


def close_output(output: object) -> None:
    """End what ``output`` holds open, where it holds anything."""
    if isinstance(output, Closable):
        output.close()


CHORD_NAMES = {
    PasteChord.CTRL_V: "ctrl+v",
    PasteChord.CTRL_SHIFT_V: "ctrl+shift+v",
    PasteChord.SHIFT_INSERT: "shift+Insert",
}
"""The paste chords by X keysym names, as xdotool (and ydotool 0.1.x) take them."""

# The keys `press_key` takes, by their X keysym names (which wtype and xdotool use too).
PRESSABLE_KEYS = ("BackSpace", "Return", "Tab", "Escape", "Delete")
# More presses than any spoken command asks for is a bug, not something to type.
MAX_PRESSES = 10_000


def check_key(name: str, count: int) -> None:
    """Refuse a key outside `PRESSABLE_KEYS` or a count outside 1..`MAX_PRESSES`.

    Raises:
        DeliveryError: The key or the count is not one this output presses.
    """
    if name not in PRESSABLE_KEYS:
        raise DeliveryError(f"cannot press {name!r}: one of {', '.join(PRESSABLE_KEYS)}")
    if not 1 <= count <= MAX_PRESSES:
        raise DeliveryError(f"cannot press {name} {count} times (1 to {MAX_PRESSES})")


@runtime_checkable
class KeyPresser(Protocol):
    """Something that presses named keys in the focused window (erase, Enter)."""

    name: OutputMethod

    def press_key(self, name: str, count: int = 1) -> None:
        """Press the key ``name`` (one of `PRESSABLE_KEYS`) ``count`` times.

        Raises:
            DeliveryError: The keys could not be pressed; the message says why.
        """
        ...


class OutputBase(abc.ABC):
    """Shared plumbing: the environment, platform and session a backend judges."""

    name: OutputMethod

    def __init__(self, env: Mapping[str, str] | None = None, platform: str | None = None) -> None:
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.platform = sys.platform if platform is None else platform
        self.session = DesktopSession.from_env(self.env, self.platform)

    def available(self) -> bool:
        return self.problem() is None

    @abc.abstractmethod
    def problem(self) -> str | None:
        """Why the backend cannot work, with the fix; None if it can."""

    def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
        if target is None:
            target = self.capture_target()
        if not text:
            return Delivery("", "", target.description, str(self.name))
        self._require()
        return self._deliver(text, target)

    @abc.abstractmethod
    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        """Deliver non-empty ``text`` to ``target``, or raise DeliveryError."""

    def capture_target(self) -> FocusTarget:
        """The window focused now, as this backend's session sees it."""
        return FocusTarget.capture(self.session, self.env)

    def type_chunks(
        self, text: str, target: FocusTarget, type_chunk: Callable[[str], None]
    ) -> Delivery:
        """Type in pieces while ``target`` keeps the focus; the rest goes to the clipboard."""
        return type_in_chunks(text, target, type_chunk, self.spill, str(self.name))

    def spill(self, text: str) -> str | None:
        """Leave ``text`` on the clipboard for the user; None, or why that failed."""
        try:
            selection.Clipboard(self.session, self.tool_env()).keep(text)
        except DeliveryError as exc:
            return str(exc)
        return None

    def _require(self) -> None:
        reason = self.problem()
        if reason is not None:
            raise DeliveryError(reason)

    def tool_env(self) -> dict[str, str]:
        """The environment for a helper process: ours, with a UTF-8 character locale."""
        env = dict(self.env)
        env["LC_ALL"] = _UTF8_LOCALE
        return env

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {str(self.name)!r}>"
