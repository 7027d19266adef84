"""The dictation's state and the bundle in use, under one lock, and what a front end reads
of them. The state changes only through `_enter`, which reports each change as it makes it
(`Callbacks.state`), so the reports come in the order the changes were made. `Dictation`
(session.py) makes the transitions."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.keeper import HistoryKeeper
from voxtray.dictation.loaded import Loaded, LoadedModel
from voxtray.dictation.status import Snapshot, start_refusal, status_reply
from voxtray.dictation.take import Take
from voxtray.dictation.utterance import Utterance
from voxtray.errors import ExitCode
from voxtray.gpu.failures import GpuFailure
from voxtray.models.progress import InstallProgress

if TYPE_CHECKING:
    from voxtray.output.base import TextOutput

LISTENING = DictationState.LISTENING


class ReportedState:
    """The state, the bundle in use and the take being spoken, under `_lock` (re-entrant:
    a transition reports while holding it)."""

    keeper: HistoryKeeper  # what the history has not stored yet, for the status

    def __init__(self, callbacks: Callbacks) -> None:
        self.callbacks = callbacks
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)
        # Under the lock:
        self._state = DictationState.LOADING
        self._detail = ""
        self._loaded: Loaded | None = None
        self._take: Take | None = None  # the dictation being spoken
        self._mic_problem: str | None = None  # why the microphone is not usable
        self._damaged: str | None = None  # the installed model that failed to load
        self._closing = False
        self.last: Utterance | None = None

    @property
    def state(self) -> DictationState:
        return self._state

    def _enter(self, state: DictationState, detail: str = "") -> None:
        """The one way the state changes. Reported under the lock, so the reports come in
        the order the changes were made."""
        with self._lock:
            self._state, self._detail = state, detail
            self._idle.notify_all()
            self.callbacks.state(state, detail)

    def _warn(self, message: str) -> None:
        self.callbacks.warning(message)

    def _progress(self, progress: InstallProgress) -> None:
        self.callbacks.progress(progress)

    def _bundle(self) -> Loaded | None:
        with self._lock:
            return self._loaded

    @property
    def loaded(self) -> LoadedModel | None:
        """The loaded model, as the tray and `voxtray status` name it."""
        return None if (loaded := self._bundle()) is None else loaded.model

    @property
    def gpu_failure(self) -> GpuFailure | None:
        """Why the loaded model runs on the CPU after its GPU failed, if it did."""
        return None if (loaded := self._bundle()) is None else loaded.gpu_failure

    def current_level(self) -> float | None:
        """The open microphone's level in dBFS, or None while no microphone is open.
        Reads whichever microphone the last `load` opened, so it follows reloads."""
        loaded = self._bundle()
        microphone = None if loaded is None else loaded.microphone
        return None if microphone is None else float(microphone.level)

    def output(self) -> TextOutput | None:
        """The loaded output backend (None until a model has loaded), to type text again."""
        return None if (loaded := self._bundle()) is None else loaded.output

    def in_use(self) -> Settings | None:
        """The settings the loaded model was loaded with."""
        return None if (loaded := self._bundle()) is None else loaded.settings

    def status(self) -> dict[str, Any]:
        return status_reply(self._snapshot())

    def refusal(self) -> tuple[str, ExitCode] | None:
        """Why `start()` cannot begin now (one line and an exit code), or None when it can,
        or when it is only busy with the previous dictation."""
        return start_refusal(self._snapshot())

    def _snapshot(self) -> Snapshot:
        with self._lock:
            loaded, listening = self._loaded, self._state is LISTENING
            return Snapshot(
                state=self._state,
                detail=self._detail,
                loaded=loaded,
                last=self.last,
                partial=loaded.pipeline.partial if loaded and listening else None,
                unstored=self.keeper.waiting,
                mic_problem=self._mic_problem,
                closing=self._closing,
                damaged_model=self._damaged,
            )
