"""What a dictation's text did in the window: erase, type, press Enter, and what it typed
last, which "scratch that" may take back within a minute in the same window."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from voxtray.output.base import TextOutput
from voxtray.output.delivery import Delivery
from voxtray.output.target import FocusTarget
from voxtray.text.postprocess import HistoryContext, Processed

RETRACT_WINDOW_S = 60.0
"""How long "scratch that" may erase the previous utterance's text."""


@runtime_checkable
class PressesKeys(Protocol):
    """An output that presses named keys (erase, Enter) besides typing."""

    def press_key(self, name: str, count: int = 1) -> None: ...


@runtime_checkable
class CapturesTarget(Protocol):
    """An output that knows the focused window, to type there later."""

    def capture_target(self) -> FocusTarget: ...


def capture_target(output: TextOutput) -> FocusTarget | None:
    """The window focused now, where the output can tell; None otherwise."""
    return output.capture_target() if isinstance(output, CapturesTarget) else None


class DeliveryState:
    """The text last typed in full, where and when; `deliver` sends the next one."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self._warn = warn
        self._typed = ""
        self._typed_at = 0.0
        self._typed_target: FocusTarget | None = None

    def context(self, target: FocusTarget | None) -> HistoryContext:
        """What "scratch that" said on its own may erase, typing into `target` now."""
        recent = time.monotonic() - self._typed_at < RETRACT_WINDOW_S
        same_window = self._typed_target == target
        retractable = recent and same_window and bool(self._typed)
        return HistoryContext(self._typed, retractable=retractable)

    def deliver(
        self,
        output: TextOutput,
        processed: Processed,
        target: FocusTarget | None,
        guard: Callable[[str], Delivery | None] | None = None,
    ) -> Delivery | None:
        """Erase, type, press Enter; keys go through the output's `press_key(name, count)`
        where it has one. Returns the typed text's delivery (None when nothing was typed).

        ``guard`` may take the text instead (a focus that takes no text): then no key is
        pressed at all and its delivery is returned."""
        presser = output if isinstance(output, PressesKeys) else None
        self._typed = ""  # until this text is known to be there in full
        refused = guard(processed.typed) if guard is not None and processed.typed else None
        if refused is not None:
            return refused
        if processed.backspaces:
            if presser is None:
                self._warn("this output cannot erase text: nothing was taken back")
            else:
                presser.press_key("BackSpace", processed.backspaces)
        delivery = output.deliver(processed.typed, target) if processed.typed else None
        complete = delivery is None or delivery.complete
        if processed.press_enter and complete:
            if presser is None:
                output.deliver("\n", target)
            else:
                presser.press_key("Return", 1)
        # Text sent with Enter is no longer there to take back.
        if complete and not processed.press_enter:
            self._typed, self._typed_at = processed.typed, time.monotonic()
            self._typed_target = target
        return delivery
