"""Push-to-talk modes: hotkey presses and releases to recording starts and stops."""

from __future__ import annotations

import time
from collections.abc import Callable

from voxtray.choices import HotkeyMode
from voxtray.hotkeys.base import Callback

TAP_THRESHOLD_S = 0.3
"""In `hold_or_tap`, presses shorter than this are taps."""


class PushToTalk:
    """Turns hotkey presses and releases into recording starts and stops.

    Modes: `hold` (record while held), `toggle` (each press flips), and `hold_or_tap`:
    a press longer than the tap threshold acts as hold, a quick tap latches recording on
    until the next press. Not thread-safe: call it from one thread (the GUI thread).
    """

    def __init__(
        self,
        start: Callback,
        stop: Callback,
        mode: HotkeyMode | str = HotkeyMode.HOLD_OR_TAP,
        *,
        clock: Callable[[], float] = time.monotonic,
        tap_threshold_s: float = TAP_THRESHOLD_S,
    ) -> None:
        """Set up the mode logic.

        Args:
            start: Starts recording.
            stop: Stops recording (and transcribes).
            mode: A `HotkeyMode` (or its value).
            clock: Seconds, monotonic; injectable for tests.
            tap_threshold_s: In `hold_or_tap`, presses shorter than this are taps.

        Raises:
            ValueError: Unknown mode.
        """
        try:
            self.mode = HotkeyMode(mode)
        except ValueError:
            choices = ", ".join(HotkeyMode.values())
            raise ValueError(f"unknown push-to-talk mode {mode!r}: use {choices}") from None
        self._start_cb, self._stop_cb = start, stop
        self._clock = clock
        self._threshold = tap_threshold_s
        self._recording = False
        self._down = False
        self._down_at = 0.0
        self._press_started = False

    @property
    def recording(self) -> bool:
        """Whether this logic has recording switched on."""
        return self._recording

    def pressed(self) -> None:
        """The hotkey went down; a second press without a release is ignored."""
        if self._down:
            return
        self._down, self._down_at = True, self._clock()
        if self.mode is HotkeyMode.HOLD:
            self._start()
        elif self.mode is HotkeyMode.TOGGLE:
            self._flip()
        else:
            self._press_started = not self._recording
            self._flip()

    def released(self) -> None:
        """The hotkey came up; a release without a press is ignored."""
        if not self._down:
            return
        self._down = False
        if self.mode is HotkeyMode.HOLD or self._long_hold_ended():
            self._stop()

    def _long_hold_ended(self) -> bool:
        # In hold_or_tap only a long press that started recording stops it; a tap latches.
        if self.mode is not HotkeyMode.HOLD_OR_TAP or not self._press_started:
            return False
        return self._clock() - self._down_at >= self._threshold

    def reset(self) -> None:
        """Forget all state, e.g. after recording was stopped by other means."""
        self._recording = self._down = self._press_started = False

    def _flip(self) -> None:
        if self._recording:
            self._stop()
        else:
            self._start()

    def _start(self) -> None:
        if not self._recording:
            self._recording = True
            self._start_cb()

    def _stop(self) -> None:
        if self._recording:
            self._recording = False
            self._stop_cb()
