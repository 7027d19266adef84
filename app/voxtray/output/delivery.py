"""What a delivery did, and typing in chunks that stops when the target window is lost.

Keys go to whichever window has the focus when they arrive, so text is typed a word or
so at a time and the target is checked in between: once it is closed or the focus has
moved, typing stops and the rest is put on the clipboard (not restored afterwards), and
the `Delivery` says how much went where.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from voxtray.errors import VoxtrayError
from voxtray.output.target import FocusTarget

CHUNK_CHARS = 16
"""The most characters typed between two checks of the target (longer words are split)."""

_WORDS = re.compile(r"\s*\S+\s*|\s+")


@dataclass(frozen=True)
class Delivery:
    """Where one text went.

    Attributes:
        text: Everything that was to be delivered.
        typed_text: The start of ``text`` that reached the target window (typed or pasted).
        target: The target window, as told to the user.
        method: The output that delivered it (its setting value).
        to_clipboard_text: The rest, left on the clipboard for the user to paste.
        reason: Why delivery stopped early (the window closed, the focus moved); None
            when the whole text reached the target.
        unchecked: Why the accessibility bus cannot check this delivery (it could not say
            where the focus was, so the text went another way); None when it can.
    """

    text: str
    typed_text: str
    target: str
    method: str
    to_clipboard_text: str = ""
    reason: str | None = None
    unchecked: str | None = None

    @property
    def typed_chars(self) -> int:
        return len(self.typed_text)

    @property
    def complete(self) -> bool:
        """Whether the whole text reached the target."""
        return self.reason is None and self.typed_text == self.text

    @property
    def lost_text(self) -> str:
        """The rest that is neither in the target nor on the clipboard."""
        rest = self.text[len(self.typed_text) :]
        return rest.removeprefix(self.to_clipboard_text)

    def summary(self) -> str:
        """One line for a notification or the history."""
        if self.complete:
            return f"delivered {len(self.text)} characters to {self.target}"
        where = (
            "the rest is on the clipboard"
            if self.to_clipboard_text and not self.lost_text
            else "the rest could not be put on the clipboard"
        )
        return (
            f"delivered {self.typed_chars} of {len(self.text)} characters to {self.target}; "
            f"{where} ({self.reason})"
        )


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Cut text into pieces of whole words (with their spaces) of about ``size`` characters.

    A piece holds at least one word; words longer than ``size`` are cut.
    """
    pieces: list[str] = []
    current = ""
    for match in _WORDS.finditer(text):
        word = match.group()
        if current and len(current) + len(word) > size:
            pieces.append(current)
            current = ""
        while len(word) > size:
            pieces.append(word[:size])
            word = word[size:]
        current += word
    if current:
        pieces.append(current)
    return pieces


def type_in_chunks(
    text: str,
    target: FocusTarget,
    type_chunk: Callable[[str], None],
    spill: Callable[[str], str | None],
    method: str,
) -> Delivery:
    """Type ``text`` piece by piece while ``target`` keeps the focus.

    Args:
        text: The text to type.
        target: The window it is meant for; an unknown target is typed in one piece.
        type_chunk: Types one piece into the focused window; raises DeliveryError.
        spill: Puts the untyped rest on the clipboard; returns None, or why it could not.
        method: The output's setting value, for the result.

    Raises:
        DeliveryError: ``type_chunk`` failed; the message says how much was typed before.
    """
    pieces = chunks(text) if target.known else [text]
    typed = 0
    for piece in pieces:
        reason = target.lost()
        if reason is not None:
            return stopped(text, typed, target, reason, spill, method)
        try:
            type_chunk(piece)
        except VoxtrayError as exc:
            if typed:
                exc.args = (f"{exc} (after {typed} of {len(text)} characters were typed)",)
            raise
        typed += len(piece)
    return Delivery(text, text, target.description, method)


def stopped(
    text: str,
    typed: int,
    target: FocusTarget,
    reason: str,
    spill: Callable[[str], str | None],
    method: str,
) -> Delivery:
    """The result of stopping after ``typed`` characters, the rest put on the clipboard."""
    rest = text[typed:]
    problem = spill(rest)
    if problem is not None:
        reason = f"{reason}; the clipboard failed too: {problem}"
    return Delivery(
        text,
        text[:typed],
        target.description,
        method,
        to_clipboard_text="" if problem is not None else rest,
        reason=reason,
    )
