"""Type as you go: live text's committed words typed while the user is still speaking.

Committed words never change, so what is typed is never taken back: each new partial's
committed text (after text processing) is typed where it extends what is already there,
on a thread of its own so that typing never holds up recognition. At the end only the
rest of the final text is left to type.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from voxtray.errors import VoxtrayError
from voxtray.text.postprocess import ActionKind, Processed, TextOptions, process


class LiveTypist:
    """Types one utterance's committed words as they come.

    Args:
        warn: Where a one-line problem goes (typing failed, the final text differed).
    """

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self.options = TextOptions()
        self.typed = ""
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._output: Any = None
        self._target: Any = None

    @property
    def active(self) -> bool:
        return self._thread is not None

    def begin(self, output: Any, target: Any, options: TextOptions) -> None:
        """Start typing for a new utterance into ``target``."""
        self.typed, self._output, self._target, self.options = "", output, target, options
        self._thread = threading.Thread(target=self._run, name="voxtray-live-typing", daemon=True)
        self._thread.start()

    def offer(self, committed: str) -> None:
        """The committed words so far; quick, from any thread."""
        if self._thread is not None:
            self._queue.put(committed)

    def finish(self, final: Processed) -> Processed:
        """Wait for the typing to end; what of ``final`` is left to deliver."""
        thread, self._thread = self._thread, None
        if thread is None:
            return final
        self._queue.put(None)
        thread.join()
        if not self.typed:
            return final
        actions = tuple(a for a in final.actions if a.kind is not ActionKind.BACKSPACE)
        whole = final.text + " "
        if whole.startswith(self.typed):
            return Processed(whole[len(self.typed) :].rstrip(" "), actions)
        self.warn("the final text differs from what was typed while speaking (see history)")
        rest = final.text.split()[len(self.typed.split()) :]
        return Processed(" ".join(rest), actions)

    def _run(self) -> None:
        broken = False
        while (committed := self._queue.get()) is not None:
            if broken or not committed.strip():
                continue
            text = process(committed, self.options).text + " "
            if not text.startswith(self.typed) or text == self.typed:
                continue
            try:
                delivery = self._output.deliver(text[len(self.typed) :], self._target)
            except VoxtrayError as exc:
                self.warn(f"typing while speaking stopped: {exc}")
                broken = True
                continue
            if delivery is not None and not delivery.complete:
                self.warn(f"typing while speaking stopped: {delivery.summary()}")
                broken = True
                continue
            self.typed = text
