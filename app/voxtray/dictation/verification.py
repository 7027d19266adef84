"""One dictation's checks on the accessibility bus: the focus looked up when it starts, no
typing into a focus that takes no text, and the field read back after delivery, with the
outcome recorded in history and shown by `voxtray status`."""

from __future__ import annotations

import threading
from collections.abc import Callable

from voxtray.dictation.keeper import HistoryKeeper
from voxtray.dictation.utterance import Utterance
from voxtray.output.delivery import Delivery
from voxtray.output.verify import Field, FieldCheck, Outcome, Probe, Verification

PENDING = "pending"
"""`Utterance.verified` while the read-back runs."""


class DeliveryCheck:
    """Look the focus up at start, refuse a non-text focus, verify after delivery.

    Args:
        keeper: Where outcomes are recorded.
        notice: Shows the user one line.
        check: The accessibility questions; one on ``os.environ`` if None.
    """

    def __init__(
        self,
        keeper: HistoryKeeper,
        notice: Callable[[str], None],
        check: FieldCheck | None = None,
    ) -> None:
        self._keeper = keeper
        self._check = check or FieldCheck(notice=notice)
        self._probe: Probe | None = None
        self._running: threading.Thread | None = None

    def begin(self) -> None:
        """Dictation started: look the focus up while the user speaks."""
        self._probe = self._check.probe()

    def found_so_far(self) -> Field:
        """The focus the look-up has found by now, without waiting (unknown until then)."""
        probe = self._probe
        return Field(None, reason="not looked up") if probe is None else probe.result(wait=0.0)

    def field(self) -> Field:
        """The focus as found at start (unknown if it was not looked up, or is still slow)."""
        probe, self._probe = self._probe, None
        return Field(None, reason="not looked up") if probe is None else probe.result()

    def guard(self, found: Field, method: str) -> Callable[[str], Delivery | None]:
        """What `DeliveryState.deliver` asks before sending keys."""
        return lambda text: self._check.refuse(found, text, method)

    def after(
        self,
        found: Field,
        delivery: Delivery | None,
        utterance: Utterance,
        on_done: Callable[[Verification], None] | None = None,
    ) -> None:
        """Read the field back on a thread; record the outcome on ``utterance`` and in history.

        A delivery refused for a non-text focus is `Outcome.MISSING` at once; one the bus
        could not follow (it could not say where the focus was) is `Outcome.UNVERIFIED`.
        """
        if delivery is None or not delivery.text:
            return
        if delivery.unchecked is not None:
            self._record(utterance, Verification(Outcome.UNVERIFIED, 0.0, delivery.unchecked))
            return
        if not delivery.typed_text:
            if found.not_text:
                self._record(utterance, Verification(Outcome.MISSING, 0.0, delivery.target))
            return
        utterance.verified = PENDING

        def done(result: Verification) -> None:
            self._record(utterance, result)
            if on_done is not None:
                on_done(result)

        self._running = self._check.verify_later(found, delivery.typed_text, done)

    def _record(self, utterance: Utterance, result: Verification) -> None:
        utterance.verified = str(result.outcome)
        utterance.timings_ms["verify"] = result.elapsed_ms
        if utterance.history_id is not None:
            self._keeper.mark_verified(utterance.history_id, str(result.outcome))

    def wait(self, timeout: float = 5.0) -> bool:
        """Wait for the last read-back; True when none is running."""
        running = self._running
        if running is not None:
            running.join(timeout)
            return not running.is_alive()
        return True
