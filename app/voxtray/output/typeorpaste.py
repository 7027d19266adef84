"""Type short text, paste long text: the fastest delivery where typing costs per character.

wtype sends every character as its own key event; on sway that is about 40 ms to start
plus 5 ms a character (100 characters: about 0.5 s before the last one shows). A paste
(clipboard saved, the text offered with wl-copy, ctrl+v, the clipboard restored) shows the
whole text in 30-65 ms whatever its length. Typing is kept for short text because it
leaves the clipboard alone and works where ctrl+v does not paste (terminals).
"""

from __future__ import annotations

from voxtray.output.base import DeliveryError, KeyPresser, OutputBase, TextOutput
from voxtray.output.delivery import Delivery
from voxtray.output.target import FocusTarget

TYPE_FIXED_MS = 40.0
TYPE_PER_CHAR_MS = 5.0
"""wtype on sway, measured: time to the last character = fixed + per character."""

TYPE_BUDGET_MS = 100.0
"""Text whose typing would take longer than this is pasted instead."""


def typing_ms(text: str) -> float:
    """The estimated time until the last character of ``text`` shows, when typed."""
    return TYPE_FIXED_MS + TYPE_PER_CHAR_MS * len(text)


def should_paste(text: str, budget_ms: float = TYPE_BUDGET_MS) -> bool:
    return typing_ms(text) > budget_ms


class TypeOrPaste(OutputBase):
    """Types with ``typer`` what fits the budget, pastes the rest with ``paster``.

    Args:
        typer: The typing backend (wtype).
        paster: The clipboard backend pressing ctrl+v through the same typer.
        budget_ms: Above this estimated typing time the text is pasted.
    """

    def __init__(
        self, typer: TextOutput, paster: TextOutput, budget_ms: float = TYPE_BUDGET_MS
    ) -> None:
        super().__init__(getattr(typer, "env", None), getattr(typer, "platform", None))
        self.typer = typer
        self.paster = paster
        self.budget_ms = budget_ms
        self.name = typer.name

    def problem(self) -> str | None:
        return self.typer.problem() or self.paster.problem()

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        chosen = self.paster if should_paste(text, self.budget_ms) else self.typer
        return chosen.deliver(text, target)

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times through the typing backend.

        Raises:
            DeliveryError: The typing backend presses no keys, or pressing failed.
        """
        if not isinstance(self.typer, KeyPresser):
            raise DeliveryError(f"{self.typer.name} cannot press keys")
        self.typer.press_key(name, count)
