"""Insert through the accessibility bus: no keyboard, no virtual-keyboard protocol, no uinput.

The focused widget's ``EditableText.InsertText`` puts the text at its caret, and the caret
is left after it, as typing would. This is what works on GNOME's and KDE's Wayland, where
no keystroke tool can type without ydotool. Measured differences from typed text:

- Undo: in a Qt QTextEdit one Ctrl+Z takes inserted text back exactly as it takes back the
  same text typed (Qt merges both into one step). GTK3's text views have no undo at all.
- An input method sees nothing: the text arrives as it is, with no composition.

Where there is no bus, or no exposed application has the focus, the ``fallback`` delivers
(on GNOME and KDE: the clipboard with a "press Ctrl+V" line, as before). A focus that takes
no text, or refuses it, gets nothing: the text goes to the clipboard and the delivery says
why.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from voxtray.choices import OutputMethod
from voxtray.desktop.atspi import Accessibility, State, Unavailable
from voxtray.output.base import OutputBase, TextOutput, check_key
from voxtray.output.delivery import Delivery, stopped
from voxtray.output.target import FocusTarget
from voxtray.output.tools import DeliveryError


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
        if not self.platform.startswith("linux"):
            return "the accessibility bus (AT-SPI) is for Linux desktops"
        if importlib.util.find_spec("jeepney") is None:
            return "jeepney not installed: pip install jeepney"
        return self.accessibility.available()

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        try:
            widget = self.accessibility.focused()
        except Unavailable as exc:
            return self._elsewhere(text, target, str(exc))
        if widget is None:
            reason = "no application on the accessibility bus has the focus"
            return self._elsewhere(text, target, reason)
        where = widget.describe()
        if not widget.insertable:
            reason = f"the focus is on {where}, which takes no inserted text"
            return stopped(text, 0, _named(target, where), reason, self.spill, str(self.name))
        try:
            took = self.accessibility.insert(widget.ref, text)
        except Unavailable as exc:
            raise DeliveryError(f"cannot insert into {where}: {exc}") from exc
        if not took:
            reason = f"{where} refused the text"
            return stopped(text, 0, _named(target, where), reason, self.spill, str(self.name))
        return Delivery(text, text, where, str(self.name))

    def _elsewhere(self, text: str, target: FocusTarget, reason: str) -> Delivery:
        self.accessibility.note_once(reason)
        if self.fallback is not None:
            return self.fallback.deliver(text, target)
        return stopped(text, 0, target, reason, self.spill, str(self.name))

    def press_key(self, name: str, count: int = 1) -> None:
        """BackSpace deletes before the caret; Return inserts a line break. No other keys."""
        check_key(name, count)
        try:
            widget = self.accessibility.focused()
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
