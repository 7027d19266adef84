"""A recognised dictation finished: its text processed, stored in history first, then
typed (erase, type, press Enter), its delivery marked, its audio kept. The result is one
`Utterance`; how the typing went is one `Typed` value."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from voxtray.dictation.cleaning import LateAnswer, clean
from voxtray.dictation.delivery_state import DeliveryState
from voxtray.dictation.keeper import HistoryKeeper
from voxtray.dictation.kept_audio import KeptAudio
from voxtray.dictation.live_typing import LiveTypist
from voxtray.dictation.modes_in_force import InForce
from voxtray.dictation.take import Take
from voxtray.dictation.utterance import Utterance
from voxtray.dictation.verification import DeliveryCheck
from voxtray.errors import VoxtrayError
from voxtray.inference.pipeline import UtteranceRecord
from voxtray.output.explain import explain as explain_output
from voxtray.text.postprocess import Processed, TextOptions, process

if TYPE_CHECKING:
    from voxtray.output.base import TextOutput
    from voxtray.output.delivery import Delivery
    from voxtray.output.target import FocusTarget
    from voxtray.output.verify import Field


class Reach(Enum):
    """How much of the text reached the window."""

    NOTHING = "nothing"  # there was nothing to type
    ALL = "all"
    PART = "part"  # typing stopped early: the rest is on the clipboard or was not typed
    NONE = "none"  # the output failed


@dataclass(frozen=True)
class Typed:
    """How typing one dictation's text went."""

    reach: Reach
    error: str | None = None
    """Why not all of it arrived."""
    delivery: Delivery | None = None
    """What the output reported (None when it typed nothing or reported nothing)."""

    @property
    def delivered(self) -> bool:
        return self.reach is Reach.ALL

    @property
    def partial(self) -> bool:
        return self.reach is Reach.PART

    @property
    def reached_window(self) -> bool:
        return self.reach in (Reach.ALL, Reach.PART)

    @property
    def partial_delivery(self) -> Delivery | None:
        """The report of a delivery that stopped early, for the history to record."""
        return self.delivery if self.partial else None

    def utterance(
        self,
        text: str,
        history_id: int | None,
        record: UtteranceRecord,
        timings: dict[str, float],
        store_error: str | None,
    ) -> Utterance:
        """The dictation as the HUD, tray and status show it, typed this way."""
        return Utterance(
            text, history_id, record, timings, self.delivered, self.error, self.partial, store_error
        )

    def target(self, pressed_in: FocusTarget | None) -> str | None:
        """The window the text went to, as told to the user."""
        if self.delivery is not None:
            return self.delivery.target
        return pressed_in.description if pressed_in and pressed_in.known else None


class Finisher:
    """Stores, types and keeps one dictation after another; remembers what was typed last
    (for "scratch that") and types as you go while the user speaks.

    Args:
        keeper: The history writes and their retries.
        checks: The accessibility checks around typing.
        kept_audio: The recordings kept beside history entries.
        warn: Shows the user one line.
        worded: Says a failure to type as the front end words it.
    """

    def __init__(
        self,
        keeper: HistoryKeeper,
        checks: DeliveryCheck,
        kept_audio: KeptAudio,
        warn: Callable[[str], None],
        worded: Callable[[VoxtrayError], str] = str,
    ) -> None:
        self.keeper, self.checks, self.kept_audio = keeper, checks, kept_audio
        self.worded = worded
        self.sent = DeliveryState(warn)
        self.typist = LiveTypist(warn)

    def type_as_you_go(
        self, output: TextOutput, target: FocusTarget | None, options: TextOptions
    ) -> None:
        """Type this dictation's committed words while it is spoken (`offer` them)."""
        self.typist.begin(output, target, options, self.sent.context(target))

    def offer(self, committed: str) -> None:
        self.typist.offer(committed)

    def finish(
        self,
        record: UtteranceRecord,
        chosen: InForce,
        take: Take,
        released: float,
        found: Field,
    ) -> Utterance:
        """Clean the text up (with a cleaner), store it, then type it, as the ``chosen``
        mode says, into the focus the accessibility bus ``found`` at the press; `released`
        is when the key came up (`time.perf_counter`). A history
        that cannot store it does not hold the text back: it is typed and kept for a later
        write."""
        output, options = chosen.output, chosen.options
        late = LateAnswer(self.keeper.history)
        # Words typed while speaking are in the window already: they are not cleaned up.
        cleaned = clean(None if self.typist.active else chosen.cleaner, record.text, late)
        text_ready = time.perf_counter()
        timings = _timings(record, take, 1000 * (text_ready - released))
        timings.update(cleaned.stages)
        processed = process(cleaned.text, options, self.sent.context(take.target))
        rest = self.typist.finish(processed)  # typed while speaking, already there
        history_id, store_error = self.keeper.add(
            processed.text, record, timings, cleanup=cleaned.history, mode=chosen.name
        )
        late.stored_as(history_id)
        recording = take.recording
        if recording is not None:
            recording.update(text=processed.text, history_id=history_id)
        typed = self._type(output, processed, rest, found, take.target)
        store_error = store_error or self._mark(history_id, processed, typed, take)
        timings["delivery"] = 1000 * (time.perf_counter() - text_ready)
        timings["total"] = 1000 * (time.perf_counter() - released)
        timings["rtf"] = record.stt_ms / 1000 / record.audio_s if record.audio_s else 0.0
        self.kept_audio.keep(history_id)  # after the text: its write never delays it
        utterance = typed.utterance(processed.text, history_id, record, timings, store_error)
        utterance.output = f"{output.name} · {explain_output(output)}"
        utterance.cleanup = cleaned.line
        utterance.mode = None if chosen.mode is None else chosen.mode.summary()
        if store_error is None:
            if recording is not None:
                recording.discard()
        else:
            self.keeper.keep_for_later(utterance, recording, typed.partial_delivery)
        self.checks.after(found, typed.delivery, utterance)
        return utterance

    def _mark(
        self, history_id: int | None, processed: Processed, typed: Typed, take: Take
    ) -> str | None:
        """Note how the typing went in the journal and the history; why the history
        refused the mark, if it did."""
        if take.recording is not None:
            take.recording.update(delivered=typed.reached_window, error=typed.error)
        if history_id is None or not (processed.typed or processed.actions):
            return None
        return self.keeper.mark(
            history_id,
            typed.delivered,
            typed.error,
            typed.partial_delivery,
            target=typed.target(take.target),
        )

    def _type(
        self,
        output: TextOutput,
        processed: Processed,
        rest: Processed,
        found: Field,
        target: FocusTarget | None,
    ) -> Typed:
        """Deliver what typing as you go left (`rest`; all of `processed` without it)."""
        typed_ahead = rest is not processed
        if rest.typed or rest.actions:
            guard = self.checks.guard(found, str(output.name))
            try:
                delivery = self.sent.deliver(output, rest, target, guard)
            except VoxtrayError as exc:
                typed = Typed(Reach.NONE, self.worded(exc))
            else:
                if delivery is None or delivery.complete:
                    typed = Typed(Reach.ALL, None, delivery)
                else:
                    typed = Typed(Reach.PART, delivery.summary(), delivery)
        else:
            typed = Typed(Reach.ALL if typed_ahead else Reach.NOTHING)
        if self.typist.problem is not None and typed_ahead:
            # What typing while speaking could not do stays in the window: say so.
            typed = Typed(Reach.PART, self.typist.problem, typed.delivery)
        return typed


def _timings(record: UtteranceRecord, take: Take, release_to_text_ms: float) -> dict[str, float]:
    """The timings known once the text is recognised, in milliseconds."""
    return {
        "mic_start": take.mic_start_ms,
        "vad": record.vad_ms,
        "stt": record.stt_ms,
        "release_to_text": release_to_text_ms,
        **{f"stt_{k}": v for k, v in record.stage_totals_ms().items()},
    }


def settled_detail(utterance: Utterance, mic_error: str | None) -> str:
    """What the tray says once the dictation is over."""
    if utterance.store_error:
        return f"not saved to history: {utterance.store_error}"
    if utterance.partial:
        return utterance.error or ""
    if utterance.error and not utterance.delivered:
        return f"not typed: {utterance.error}"
    return mic_error or ""
