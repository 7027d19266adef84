"""What the History window shows and does about AI clean-up: the short outcome beside each
text, the difference between what was said and what was typed (or what the model answered
and was refused), and clean-up run again on the text as recognised."""

from __future__ import annotations

from typing import TYPE_CHECKING

from voxtray.dictation.cleaning import kept
from voxtray.errors import VoxtrayError, first_line
from voxtray.history.corrections import difference_html
from voxtray.history.store import Entry, History

if TYPE_CHECKING:
    from voxtray.cleanup import Cleaner

TEXT_SHOWN = 60
"""Characters of a dictation's text in its row (the whole text is in the row's tooltip)."""


def text_cell(entry: Entry) -> str:
    """The start of the text, on one line."""
    text = " ".join(entry.text.split())
    return text if len(text) <= TEXT_SHOWN else text[: TEXT_SHOWN - 1] + "…"


def _reason(entry: Entry) -> tuple[str, str]:
    reason, _, detail = (entry.cleanup or "").partition(": ")
    return reason, detail.removeprefix("raw text: ")


def cleanup_cell(entry: Entry) -> str:
    """Clean-up's outcome in a word or two; empty where it did not run."""
    if entry.cleanup is None:
        return ""
    reason, _ = _reason(entry)
    if reason == "accepted":
        return "cleaned up"
    if reason == "accepted (late)":
        return "typed as said (answer came late)"
    return f"typed as said ({reason.removesuffix(' (late)')})"


def cleanup_difference(entry: Entry) -> str:
    """The change clean-up made, or the answer it refused, as the window's rich text."""
    if entry.raw_text is None:
        return ""
    reason, detail = _reason(entry)
    if reason == "accepted":
        return f"Clean-up changed what you said: {difference_html(entry.raw_text, entry.text)}"
    if entry.cleaned_text is not None:
        changes = difference_html(entry.raw_text, entry.cleaned_text)
        return f"Clean-up's answer, not typed ({detail}): {changes}"
    return f"Clean-up: {detail}"


def clean_again(cleaner: Cleaner, entry: Entry, history: History, wait_s: float) -> str:
    """Clean the text as recognised up again, waiting up to ``wait_s``; keep the outcome
    with the entry, and the cleaned text as its text when the guard takes it. One line
    saying how it went."""
    raw = entry.raw_text if entry.raw_text is not None else entry.text
    outcome = cleaner.clean(raw, budget_ms=int(wait_s * 1000))
    try:
        history.mark_cleanup(entry.id, kept(outcome))
        if outcome.accepted:
            history.update_text(entry.id, outcome.text)
    except VoxtrayError as exc:
        return f"not kept: {first_line(exc)}"
    return outcome.summary()
