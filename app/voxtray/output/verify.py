"""Know the field before typing, and read it back after: verified delivery.

When dictation starts, the focused widget is looked up on the accessibility bus on a thread
of its own (the user is speaking meanwhile), with the text it holds, all of it within
`CHECK_DEADLINE_S`: a slow tree, a hung application or an answer that cannot be read makes
the check `Outcome.UNVERIFIED`, never the dictation slower. At delivery:

- a focus the bus says is not a text field (a button, a desktop, a read-only view) gets no
  keystrokes: the text goes to the clipboard with a one-line notice;
- after the text was typed or pasted, a thread reads the field back until the text is
  there or `VERIFY_TIMEOUT_S` passed: `Outcome.VERIFIED`, or `Outcome.MISSING` (then the
  text goes to the clipboard with a notice); with no bus, or an application that exposes
  nothing, `Outcome.UNVERIFIED`, said once in one line.

Nothing here runs before the text is sent, so the check never delays it.
"""

from __future__ import annotations

import enum
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from voxtray.desktop.atspi import Accessibility, Unavailable, Widget
from voxtray.desktop.bus import Deadline
from voxtray.desktop.session import DesktopSession
from voxtray.output import selection
from voxtray.output.delivery import Delivery
from voxtray.output.tools import DeliveryError

log = logging.getLogger(__name__)

CHECK_DEADLINE_S = 0.1
"""All the questions of one look-up of the focus and its text: past it, the bus is too slow
to be worth asking (a field is found in 2-14 ms, read in under 1 ms)."""
VERIFY_TIMEOUT_S = 1.0
"""How long typed text has to show up in the field, all reads included (keys arrive after
the tool returns, and the application answers once it has taken them in)."""
PROBE_WAIT_S = 0.05
"""How long delivery waits for the start-of-dictation look-up, if it is still running."""


class Outcome(enum.StrEnum):
    """What reading the field back found, as history and `voxtray status` record it."""

    VERIFIED = "verified"
    UNVERIFIED = "unverified"
    MISSING = "missing"


@dataclass(frozen=True)
class Field:
    """The focused widget when dictation started, and the text it held.

    Attributes:
        widget: What the accessibility bus said has the focus; None when it cannot say.
        before: Its text then ("" without a Text interface).
        reason: Why nothing is known, in one line, when ``widget`` is None; or why its
            text is not known, when it is not (the read-back is then not done).
    """

    widget: Widget | None
    before: str = ""
    reason: str | None = None

    @property
    def not_text(self) -> bool:
        """Whether the bus says the focus is something that takes no typed text."""
        return self.widget is not None and not self.widget.editable


@dataclass(frozen=True)
class Verification:
    """One read-back: the outcome, what it cost, and the line to tell the user."""

    outcome: Outcome
    elapsed_ms: float
    detail: str = ""
    notice: str | None = None


@dataclass
class Probe:
    """The start-of-dictation look-up, running on its own thread."""

    _done: threading.Event = field(default_factory=threading.Event)
    _field: Field = field(default_factory=lambda: Field(None, reason="not looked up yet"))

    def result(self, wait: float = PROBE_WAIT_S) -> Field:
        """The field, or an unknown one if the look-up has not finished within ``wait``."""
        if not self._done.wait(wait):
            return Field(None, reason="the accessibility bus was too slow to say")
        return self._field


class FieldCheck:
    """What delivery asks the accessibility bus, before and after the text is sent.

    Args:
        env: The session's environment (``os.environ`` if None).
        notice: Shows the user one line (the tray's warning); logged if None.
        accessibility: The bus client; one on ``env`` if None.
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        notice: Callable[[str], None] | None = None,
        accessibility: Accessibility | None = None,
    ) -> None:
        self._env = dict(os.environ if env is None else env)
        self.accessibility = accessibility or Accessibility(self._env)
        self._notice = notice or log.warning

    def capture(self) -> Field:
        """The focused widget now and its text, within `CHECK_DEADLINE_S` of the bus being
        reached; never raises."""
        try:
            if (gone := self.accessibility.available()) is not None:
                raise Unavailable(gone)
            deadline = Deadline(CHECK_DEADLINE_S)
            widget = self.accessibility.focused(deadline)
        except Unavailable as exc:
            self.accessibility.note_once(str(exc))
            return Field(None, reason=str(exc))
        if widget is None:
            reason = "no application on the accessibility bus has the focus"
            self.accessibility.note_once(reason)
            return Field(None, reason=reason)
        before = ""
        if widget.has_text:
            try:
                before = self.accessibility.text(widget.ref, deadline)
            except Unavailable as exc:
                # Without the text before, a read-back could take old text for new.
                return Field(widget, reason=f"cannot read {widget.describe()}: {exc}")
        return Field(widget, before)

    def probe(self) -> Probe:
        """Look the focus up on a thread; `Probe.result` gives it."""
        probe = Probe()

        def run() -> None:
            try:
                probe._field = self.capture()
            except Exception as exc:  # a check must never cost the dictation
                log.exception("the accessibility check failed")
                probe._field = Field(None, reason=f"the accessibility check failed: {exc}")
            probe._done.set()

        threading.Thread(target=run, name="voxtray-field-probe", daemon=True).start()
        return probe

    def refuse(self, found: Field, text: str, method: str) -> Delivery | None:
        """No typing into nowhere: where the focus takes no text, the clipboard gets it.

        Returns:
            The delivery that put ``text`` on the clipboard, or None to type as usual.
        """
        if not found.not_text or found.widget is None or not text:
            return None
        where = found.widget.describe()
        reason = f"the focus is on {where}, not a text field"
        problem = self.spill(text)
        if problem is not None:
            reason = f"{reason}; the clipboard failed too: {problem}"
        else:
            self._notice(f"{reason}: the text is on the clipboard, press Ctrl+V")
        return Delivery(
            text, "", where, method, to_clipboard_text="" if problem else text, reason=reason
        )

    def verify(self, found: Field, text: str, timeout: float = VERIFY_TIMEOUT_S) -> Verification:
        """Read the field back until ``text`` is there; spill it if it never comes."""
        started = time.perf_counter()
        widget = found.widget
        if widget is None or not widget.has_text or found.reason:
            why = found.reason or f"{widget.describe() if widget else 'the field'} exposes no text"
            return Verification(Outcome.UNVERIFIED, _ms(started), why)
        baseline = found.before.count(text) if text else 0
        # Reads go on until the text is due: an application still taking in the keys just
        # sent answers late, and that is no reason to give up early; the last read still
        # gets the check's own deadline.
        deadline = Deadline(timeout)
        current = ""
        while True:
            allowed = Deadline(max(deadline.left(), CHECK_DEADLINE_S))
            try:
                current = self.accessibility.text(widget.ref, allowed, timeout=timeout)
            except Unavailable as exc:
                return Verification(Outcome.UNVERIFIED, _ms(started), str(exc))
            if current.count(text) > baseline:
                return Verification(Outcome.VERIFIED, _ms(started), widget.describe())
            if deadline.left() <= 0:
                break
            time.sleep(0.01)
        where = widget.describe()
        problem = self.spill(text)
        if problem is None:
            notice = f"the text did not arrive in {where}: it is on the clipboard, press Ctrl+V"
        else:
            notice = f"the text did not arrive in {where}, and the clipboard failed: {problem}"
        return Verification(Outcome.MISSING, _ms(started), where, notice)

    def verify_later(
        self, found: Field, text: str, done: Callable[[Verification], None]
    ) -> threading.Thread:
        """`verify` on a thread, then ``done`` with the result (and the notice shown)."""

        def run() -> None:
            try:
                result = self.verify(found, text)
            except Exception as exc:  # a check must never cost the dictation
                log.exception("the accessibility read-back failed")
                result = Verification(Outcome.UNVERIFIED, 0.0, f"the read-back failed: {exc}")
            if result.notice:
                self._notice(result.notice)
            done(result)

        thread = threading.Thread(target=run, name="voxtray-verify", daemon=True)
        thread.start()
        return thread

    def spill(self, text: str) -> str | None:
        """Leave ``text`` on the clipboard; None, or why that failed."""
        env = {**self._env, "LC_ALL": "C.UTF-8"}
        try:
            selection.Clipboard(DesktopSession.from_env(env), env).keep(text)
        except DeliveryError as exc:
            return str(exc)
        return None


def _ms(started: float) -> float:
    return 1000 * (time.perf_counter() - started)
