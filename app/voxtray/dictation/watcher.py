"""The dictation's watcher thread (`voxtray-watch`): it reopens a lost microphone, retries
text the history refused, prunes the kept audio when due and, after a rest, has the
recogniser hand its working memory back. What each finding means for the state is the
dictation's to say, through the `Watched` calls."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from voxtray.dictation.io import DictationIO, Warn
from voxtray.dictation.keeper import HistoryKeeper
from voxtray.dictation.kept_audio import KeptAudio
from voxtray.dictation.loaded import Loaded
from voxtray.errors import VoxtrayError

if TYPE_CHECKING:
    from voxtray.audio.microphone import Microphone

log = logging.getLogger(__name__)

# How often the watcher looks at the microphone and at text waiting for the history.
WATCH_EVERY_S = 0.5
MIC_RETRY_EVERY_S = 1.0
HISTORY_RETRY_EVERY_S = 5.0
# Ready this long after a dictation, the recogniser hands back its working memory
# (~25-50 MB); refilling it costs the next dictation a few ms, so not between quick ones.
RELEASE_IDLE_AFTER_S = 10.0


class Watched(Protocol):
    """What the watcher asks of the dictation it watches."""

    def microphone_to_reopen(self) -> Loaded | None:
        """The bundle whose microphone to reopen (a microphone found lost is reported so
        first), or None when nothing is to reopen."""

    def microphone_failed(self, problem: str) -> None:
        """Reopening failed; `problem` says why."""

    def microphone_back(self, microphone: Microphone, opened_for: Loaded) -> bool:
        """Take the reopened microphone; False when it is no longer wanted."""

    def close_audio(self) -> None: ...

    def when_ready(self, call: Callable[[Loaded], None]) -> None:
        """Run `call` under the dictation's lock if it is ready with a model loaded."""

    def retry_history(self) -> int: ...


class Watcher:
    """Runs the checks every `WATCH_EVERY_S` from the first `start` to `stop`.

    Args:
        watched: The dictation.
        io: Reopens the microphone.
        keeper: Says whether text waits for the history.
        kept_audio: Prunes the kept recordings when due.
        warn: Shows the user one line.
    """

    def __init__(
        self,
        watched: Watched,
        io: DictationIO,
        keeper: HistoryKeeper,
        kept_audio: KeptAudio,
        warn: Warn,
    ) -> None:
        self._watched, self._io, self._warn = watched, io, warn
        self._keeper, self._kept_audio = keeper, kept_audio
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        # Read and written only under the dictation's lock (`note_active`, `when_ready`).
        self._last_active: float | None = None

    def start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="voxtray-watch", daemon=True
                )
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    def note_active(self) -> None:
        """Recognition just ran (call under the dictation's lock): the rest starts now."""
        self._last_active = time.monotonic()

    def _watch(self) -> None:
        next_mic = next_history = 0.0
        while not self._stop.wait(WATCH_EVERY_S):
            now = time.monotonic()
            try:
                if now >= next_mic:
                    next_mic = now + MIC_RETRY_EVERY_S
                    if (loaded := self._watched.microphone_to_reopen()) is not None:
                        self._reopen(loaded)
                if self._keeper.waiting and now >= next_history:
                    next_history = now + HISTORY_RETRY_EVERY_S
                    self._watched.retry_history()
                self._release_when_idle(now)
                self._kept_audio.prune_if_due()
            except Exception:  # the watcher must outlive any one failure
                log.exception("watcher")

    def _reopen(self, loaded: Loaded) -> None:
        self._watched.close_audio()
        self._io.reinitialise_portaudio()
        try:
            microphone = self._io.open_microphone(loaded.settings, self._warn, require_audio=True)
        except VoxtrayError as exc:
            self._watched.microphone_failed(str(exc))
            return
        if not self._watched.microphone_back(microphone, loaded):
            microphone.close()
            return
        log.info("microphone back")

    def _release_when_idle(self, now: float) -> None:
        # Under the dictation's lock (~5-12 ms): a start waits for the release to finish,
        # and finds the refill it asks for.
        def release(loaded: Loaded) -> None:
            if self._last_active is not None and now - self._last_active >= RELEASE_IDLE_AFTER_S:
                self._last_active = None
                loaded.pipeline.release_idle_memory()

        self._watched.when_ready(release)
