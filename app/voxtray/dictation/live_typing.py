"""Type as you go: live text's committed words typed while the user is still speaking.

Committed words never change, but what a spoken command makes of them does: "scratch
that" takes back the sentence before it, "press enter" is no text at all. So each new
partial's committed text (after text processing) is compared with what is already in the
window: what no longer belongs there is erased through the output that typed it, the rest
is typed. The last words that could still begin a spoken command ("press", "scratch") are
held back until the next word says whether they do. Typing runs on a thread of its own
so that it never holds up recognition; at the end only the difference from the final
text is left to deliver.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from voxtray.errors import VoxtrayError
from voxtray.text.postprocess import (
    TABLES,
    Action,
    ActionKind,
    HistoryContext,
    Processed,
    TextOptions,
    process,
)

if TYPE_CHECKING:
    from voxtray.output.base import TextOutput
    from voxtray.output.target import FocusTarget

_PUNCT = ",.;:!?…"


class LiveTypist:
    """Types one utterance's committed words as they come.

    Args:
        warn: Where a one-line problem goes (typing or erasing failed).

    Attributes:
        typed: What this utterance put in the window so far.
        problem: Why typing while speaking stopped, None while it works.
    """

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self.options = TextOptions()
        self.typed = ""
        self.problem: str | None = None
        self._context = HistoryContext()
        self._erased_previous = False
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._output: TextOutput | None = None
        self._target: FocusTarget | None = None

    @property
    def active(self) -> bool:
        return self._thread is not None

    def begin(
        self,
        output: TextOutput,
        target: FocusTarget | None,
        options: TextOptions,
        context: HistoryContext | None = None,
    ) -> None:
        """Start typing for a new utterance into ``target``; ``context`` is what the
        previous utterance left there (for a "scratch that" that takes it back)."""
        self.typed, self._output, self._target, self.options = "", output, target, options
        self.problem, self._erased_previous = None, False
        self._context = context or HistoryContext()
        self._thread = threading.Thread(target=self._run, name="voxtray-live-typing", daemon=True)
        self._thread.start()

    def offer(self, committed: str) -> None:
        """The committed words so far; quick, from any thread."""
        if self._thread is not None:
            self._queue.put(committed)

    def finish(self, final: Processed) -> Processed:
        """Wait for the typing to end; what is left to deliver for the window to hold
        ``final``: backspaces over what no longer belongs, then the rest of the text."""
        thread, self._thread = self._thread, None
        if thread is None:
            return final
        self._queue.put(None)
        thread.join()
        if not self.typed and not self._erased_previous:
            return final
        actions = [a for a in final.actions if a.kind is not ActionKind.BACKSPACE]
        whole = final.typed
        common = _common(self.typed, whole)
        if common < len(self.typed):
            actions.insert(0, Action(ActionKind.BACKSPACE, len(self.typed) - common))
        return Processed(whole[common:].rstrip(" "), tuple(actions))

    def _run(self) -> None:
        while (committed := self._queue.get()) is not None:
            if self.problem is not None or not committed.strip():
                continue
            try:
                self._advance(committed)
            except VoxtrayError as exc:
                self._stop(f"typing while speaking stopped: {exc}")

    def _advance(self, committed: str) -> None:
        settled = settled_words(committed, self.options)
        if not settled:
            return
        processed = process(settled, self.options, self._context)
        target = processed.typed
        common = _common(self.typed, target)
        if common < len(self.typed) and not self._erase(len(self.typed) - common):
            return
        if processed.backspaces and not self._erased_previous and not self.typed:
            if not self._erase(processed.backspaces, "the previous dictation"):
                return
            self._erased_previous = True
        if len(target) > len(self.typed):
            self._type(target[len(self.typed) :], target)

    def _erase(self, count: int, what: str | None = None) -> bool:
        press = getattr(self._output, "press_key", None)
        shown = what or repr(self.typed[len(self.typed) - count :].strip())
        if press is None:
            self._stop(f"{shown} typed while speaking could not be erased: this output cannot")
            return False
        press("BackSpace", count)
        if what is None:
            self.typed = self.typed[: len(self.typed) - count]
        return True

    def _type(self, text: str, whole: str) -> None:
        if self._output is None:  # not begun
            return
        delivery = self._output.deliver(text, self._target)
        if delivery is not None and not delivery.complete:
            self._stop(f"typing while speaking stopped: {delivery.summary()}")
            return
        self.typed = whole

    def _stop(self, problem: str) -> None:
        self.problem = problem
        self.warn(problem)


def _common(first: str, second: str) -> int:
    """How many leading characters the two share."""
    for index, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            return index
    return min(len(first), len(second))


def settled_words(committed: str, options: TextOptions) -> str:
    """``committed`` without its last words where they could begin a spoken command,
    line break or mark of more than one word ("press" of "press enter")."""
    table = TABLES.get(options.language.split("-")[0].casefold())
    if table is None or not (options.spoken_commands or options.spoken_punctuation):
        return committed
    phrases = [p.split() for p in (*table.commands, *table.breaks, *table.marks) if " " in p]
    words = committed.split()
    for count in range(max((len(p) for p in phrases), default=1) - 1, 0, -1):
        tail = [w.strip(_PUNCT).lower() for w in words[-count:]]
        if len(words) >= count and any(p[:count] == tail for p in phrases if len(p) > count):
            return " ".join(words[:-count])
    return committed
