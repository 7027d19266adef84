"""Keeping each dictation's text: the history write and its marks, text the history could
not take retried later (and kept off the data disk at quit), and dictations a quit or
crash left in the journal recovered at the next load. No Qt."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from voxtray.choices import DictationState
from voxtray.dictation.journal import Journal, Recording, Unfinished, now_stamp
from voxtray.dictation.utterance import Utterance
from voxtray.errors import VoxtrayError, first_line
from voxtray.history.store import Cleanup, History
from voxtray.inference.pipeline import DictationPipeline, UtteranceRecord
from voxtray.text.postprocess import HistoryContext, TextOptions, process

if TYPE_CHECKING:
    from voxtray.output.delivery import Delivery

log = logging.getLogger(__name__)

# A recovered journal is fed to the pipeline in chunks of this many samples.
_RECOVER_CHUNK = 16000


@dataclass
class Unstored:
    """Text the history could not take yet, with what is left to record about it."""

    utterance: Utterance
    recording: Recording | None
    partial_delivery: Delivery | None = None


class HistoryKeeper:
    """The history and journal side of `Dictation`; thread-safe."""

    def __init__(
        self,
        history: History,
        journal: Journal,
        warning: Callable[[str], None],
        state: Callable[[DictationState, str], None],
    ) -> None:
        self.history = history
        self.journal = journal
        self._warning = warning
        self._state = state
        self._lock = threading.Lock()
        self._retry_lock = threading.Lock()  # one history retry at a time
        self._unstored: list[Unstored] = []

    @property
    def waiting(self) -> int:
        """Dictations whose text the history has not taken yet."""
        with self._lock:
            return len(self._unstored)

    def add(
        self,
        text: str,
        record: UtteranceRecord,
        timings: dict[str, float],
        *,
        recovered: bool = False,
        cleanup: Cleanup | None = None,
        mode: str | None = None,
    ) -> tuple[int | None, str | None]:
        """Store a dictation; its id, or None and why the history refused."""
        try:
            history_id = add_to_history(
                self.history, text, record, timings, recovered=recovered, cleanup=cleanup,
                mode=mode,
            )  # fmt: skip
        except (VoxtrayError, RuntimeError) as exc:
            return None, first_line(exc)
        return history_id, None

    def mark(
        self,
        history_id: int,
        delivered: bool,
        error: str | None,
        partial: Delivery | None = None,
        target: str | None = None,
    ) -> str | None:
        """Record where the text went (`target`, as told to the user); why the history
        refused, or None."""
        try:
            if partial is not None:
                self.history.mark_partial(
                    history_id, partial.typed_text, partial.target, partial.reason or ""
                )
            elif delivered:
                self.history.mark_delivered(history_id, target)
            else:
                self.history.mark_failed(history_id, error or "not delivered")
        except (VoxtrayError, RuntimeError) as exc:
            return first_line(exc)
        return None

    def mark_verified(self, history_id: int, outcome: str) -> str | None:
        """Record what reading the field back found; why the history refused, or None."""
        try:
            self.history.mark_verified(history_id, outcome)
        except (VoxtrayError, RuntimeError) as exc:
            return first_line(exc)
        return None

    def keep_for_later(
        self,
        utterance: Utterance,
        recording: Recording | None,
        partial_delivery: Delivery | None,
    ) -> None:
        """The history refused: hold the text (and its journal entry) for `retry`."""
        with self._lock:
            self._unstored.append(Unstored(utterance, recording, partial_delivery))

    def retry(self) -> int:
        """Store text the history could not take before; returns how many still wait."""
        with self._retry_lock:
            with self._lock:
                waiting = list(self._unstored)
            for item in waiting:
                if not self._store_later(item):
                    break
            return self.waiting

    def _store_later(self, item: Unstored) -> bool:
        utterance = item.utterance
        if utterance.history_id is None:
            history_id, _ = self.add(utterance.text, utterance.record, utterance.timings_ms)
            if history_id is None:
                return False
            utterance.history_id = history_id
            if item.recording is not None:
                item.recording.update(history_id=history_id)
        history_id, delivered = utterance.history_id, utterance.delivered
        marked = (
            self.mark(history_id, delivered, utterance.error, item.partial_delivery)
            if utterance.text
            else None
        )
        if marked is not None:
            return False
        utterance.store_error = None
        if item.recording is not None:
            item.recording.discard()
        with self._lock:
            self._unstored.remove(item)
        log.info("stored in history after a retry: %r", utterance.text)
        return True

    def keep_at_quit(self) -> None:
        """Text the history still cannot take at quit goes where the next start finds it."""
        with self._lock:
            left = list(self._unstored)
        for item in left:
            utterance, recording = item.utterance, item.recording
            if recording is not None and recording.problem is None:
                continue  # its journal entry holds the text
            started = recording.note.get("started") if recording is not None else None
            note: dict[str, Any] = {
                "started": started or now_stamp(),
                "text": utterance.text,
                "delivered": utterance.delivered,
                # With a history id the text is stored and only its delivery is to mark.
                "history_id": utterance.history_id,
                "model": utterance.record.model,
            }
            kept = self.journal.keep_text(note)
            if kept is None:
                log.error("nowhere to keep a dictation (disk full): %r", utterance.text)
                continue
            log.warning("history unavailable at quit: dictation kept in %s", kept)
            if recording is not None:
                recording.discard()

    # --- recovery -----------------------------------------------------------------------

    def recover(
        self, pipeline: DictationPipeline, options: TextOptions, speaking: Recording | None
    ) -> None:
        """Store dictations a quit, crash or history failure left unfinished, marked
        recovered; they are not typed (the window they were meant for may be gone).
        `speaking` is the dictation in progress, whose entry is not a leftover."""
        with self._lock:
            # This process's own (retry stores those) and the one being spoken.
            recordings = [item.recording for item in self._unstored] + [speaking]
        mine = {r.audio_path for r in recordings if r is not None}
        entries = [e for e in self.journal.unfinished() if e.audio_path not in mine]
        if not entries:
            return
        self._state(DictationState.LOADING, f"recovering {len(entries)} dictation(s)")
        recovered = 0
        for entry in entries:
            try:
                recovered += self._recover_one(pipeline, options, entry)
            except VoxtrayError as exc:
                self._warning(f"could not recover a dictation: {first_line(exc)}")
        if recovered:
            self._warning(f"recovered {recovered} unfinished dictation(s) into Recent dictations")

    def _recover_one(
        self, pipeline: DictationPipeline, options: TextOptions, entry: Unfinished
    ) -> int:
        text = entry.text
        if text is None:
            record = _transcribe(pipeline, entry.audio())
            text = process(record.text, options, HistoryContext("")).text
        else:
            record = UtteranceRecord(text=text, model=str(entry.note.get("model", "")))
        if not text or self._already_stored(text, entry):
            entry.discard()
            return 0
        history_id, problem = self.add(text, record, {}, recovered=True)
        if history_id is None:
            raise VoxtrayError(problem or "history unavailable")
        if entry.note.get("delivered"):
            self.mark(history_id, True, None)
        entry.discard()
        return 1

    def _already_stored(self, text: str, entry: Unfinished) -> bool:
        """Whether a kill came after the history write (the note may not say so)."""
        history_id = entry.note.get("history_id")
        if isinstance(history_id, int):
            stored = self.history.get(history_id)
            if stored is not None and stored.text == text:
                if entry.note.get("delivered") and not stored.delivered:
                    self.mark(history_id, True, None)
                return True
        started = entry.started
        for stored in self.history.recent(20):
            if stored.created_at is None:  # a damaged row: not this dictation's
                continue
            created = stored.created_at.isoformat().replace("+00:00", "Z")
            if stored.text == text and created >= started:
                return True
        return False


def add_to_history(
    history: History,
    text: str,
    record: UtteranceRecord,
    timings: dict[str, float],
    *,
    recovered: bool = False,
    rerun_of: int | None = None,
    cleanup: Cleanup | None = None,
    mode: str | None = None,
) -> int:
    """Store what the recogniser made of an utterance, as `text`; its new entry's id.

    Raises:
        DiskError: The history cannot store it.
    """
    return history.add(
        text,
        model=record.model,
        engine=record.engine,
        provider=record.provider,
        audio_s=record.audio_s,
        timings=timings,
        recovered=recovered,
        rerun_of=rerun_of,
        cleanup=cleanup,
        mode=mode,
    )


def _transcribe(pipeline: DictationPipeline, audio: np.ndarray[Any, Any]) -> UtteranceRecord:
    pipeline.start(decode_ahead=False)
    try:
        for begin in range(0, audio.size, _RECOVER_CHUNK):
            pipeline.feed(audio[begin : begin + _RECOVER_CHUNK])
    finally:
        record = pipeline.finish()
    return record
