"""Insert through the accessibility bus: no keyboard, no virtual-keyboard protocol, no uinput.

The focused widget's ``EditableText.InsertText`` puts the text at its caret, and the caret
is left after it, as typing would. This is what works on GNOME's and KDE's Wayland, where
no keystroke tool can type without ydotool. Measured differences from typed text:

- Undo: in a Qt QTextEdit one Ctrl+Z takes inserted text back exactly as it takes back the
  same text typed (Qt merges both into one step). GTK3's text views have no undo at all.
- An input method sees nothing: the text arrives as it is, with no composition.

Where there is no bus, no exposed application has the focus, or the bus cannot say within
`LOOKUP_DEADLINE_S` (a slow tree, a hung application, answers that cannot be read), the
``fallback`` delivers (on GNOME and KDE: the clipboard with a "press Ctrl+V" line). A focus
that takes no text, or refuses it, gets nothing: the text goes to the clipboard and the
delivery says why. An insertion with no clear answer (an error, none within
`INSERT_TIMEOUT_S`) is settled by reading the field: the text is there, or it goes to the
clipboard.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Mapping

from voxtray.choices import OutputMethod
from voxtray.desktop.atspi import Accessibility, State, Unanswered, Unavailable, Widget
from voxtray.desktop.bus import Deadline
from voxtray.output.base import OutputBase, TextOutput, check_key
from voxtray.output.delivery import Delivery, stopped
from voxtray.output.target import FocusTarget
from voxtray.output.tools import DeliveryError

LOOKUP_DEADLINE_S = 0.25
"""All the questions that find the focused field before an insertion (2-3 ms measured)."""
READ_DEADLINE_S = 0.1
"""Reading the field before an insertion, and after one that was not answered clearly."""


class AtspiOutput(OutputBase):
    """``EditableText.InsertText`` at the focused widget's caret.

    Args:
        env: The session's environment; ``os.environ`` if None.
        platform: ``sys.platform`` if None.
        fallback: What delivers when the bus cannot tell where the focus is; None: the
            clipboard, with the reason.
        accessibility: The bus client; one on ``env`` if None.
    """

    name = OutputMethod.ATSPI

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        platform: str | None = None,
        fallback: TextOutput | None = None,
        accessibility: Accessibility | None = None,
    ) -> None:
        super().__init__(env, platform)
        self.fallback = fallback
        self.accessibility = accessibility or Accessibility(self.env)

    def problem(self) -> str | None:
        return self._cannot_run() or self.accessibility.available()

    def _cannot_run(self) -> str | None:
        if not self.platform.startswith("linux"):
            return "the accessibility bus (AT-SPI) is for Linux desktops"
        if importlib.util.find_spec("jeepney") is None:
            return "jeepney not installed: pip install jeepney"
        return None

    def _require(self) -> None:
        # With a fallback, a bus that is gone (or too slow) only sends the text that way.
        if self.fallback is None:
            super()._require()
        elif reason := self._cannot_run():
            raise DeliveryError(reason)

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        if (gone := self.accessibility.available()) is not None:
            return self._elsewhere(text, target, gone)
        try:  # the deadline starts once the bus is reached
            widget = self.accessibility.focused(Deadline(LOOKUP_DEADLINE_S))
        except Unavailable as exc:
            return self._elsewhere(text, target, str(exc))
        if widget is None:
            reason = "no application on the accessibility bus has the focus"
            return self._elsewhere(text, target, reason)
        where = widget.describe()
        if not widget.insertable:
            reason = f"the focus is on {where}, which takes no inserted text"
            return stopped(text, 0, _named(target, where), reason, self.spill, str(self.name))
        before = self._read(widget)
        try:
            took = self.accessibility.insert(widget.ref, text)
        except Unanswered as exc:
            return self._settle(text, target, widget, before, str(exc))
        except Unavailable as exc:  # nothing was inserted
            return self._elsewhere(text, target, str(exc))
        if not took:
            reason = f"{where} refused the text"
            return stopped(text, 0, _named(target, where), reason, self.spill, str(self.name))
        return Delivery(text, text, where, str(self.name))

    def _read(self, widget: Widget) -> str | None:
        try:
            return self.accessibility.text(widget.ref, Deadline(READ_DEADLINE_S))
        except Unavailable:
            return None

    def _settle(
        self, text: str, target: FocusTarget, widget: Widget, before: str | None, problem: str
    ) -> Delivery:
        """An insertion with no clear answer: typed if the field now holds one more copy
        of the text than before, else on the clipboard."""
        where = widget.describe()
        after = self._read(widget) if before is not None else None
        if before is not None and after is not None and after.count(text) > before.count(text):
            return Delivery(text, text, where, str(self.name))
        reason = f"{where} did not confirm the insertion ({problem})"
        return stopped(text, 0, _named(target, where), reason, self.spill, str(self.name))

    def _elsewhere(self, text: str, target: FocusTarget, reason: str) -> Delivery:
        """The bus cannot say where the focus is: the fallback delivers, or the clipboard
        takes it; either way the bus cannot check it."""
        self.accessibility.note_once(reason)
        if self.fallback is not None:
            delivery = self.fallback.deliver(text, target)
        else:
            delivery = stopped(text, 0, target, reason, self.spill, str(self.name))
        return dataclasses.replace(delivery, unchecked=reason)

    def press_key(self, name: str, count: int = 1) -> None:
        """BackSpace deletes before the caret; Return inserts a line break. No other keys."""
        check_key(name, count)
        try:
            widget = self.accessibility.focused(Deadline(LOOKUP_DEADLINE_S))
            if widget is None or not widget.insertable:
                raise DeliveryError(f"cannot press {name}: the focus takes no text")
            if name == "Return":
                if State.MULTI_LINE not in widget.states:
                    raise DeliveryError("cannot press Enter without a keyboard in a one-line field")
                self.accessibility.insert(widget.ref, "\n" * count)
            elif name == "BackSpace":
                self.accessibility.delete_before_caret(widget.ref, count)
            else:
                raise DeliveryError(f"cannot press {name} without a keyboard")
        except Unavailable as exc:
            raise DeliveryError(f"cannot press {name}: {exc}") from exc


def _named(target: FocusTarget, where: str) -> FocusTarget:
    """The target as the bus described it, for the delivery's one line."""
    return FocusTarget(target.kind, target.ident, where, target.session, target.env)
