"""What a user's edit of a dictation teaches: the words that changed, as a replacement
(`spoken -> written`) or a vocabulary word, and the word-level difference of two texts."""

from __future__ import annotations

import difflib
import html


def correction(old: str, new: str) -> tuple[str, str] | None:
    """The span of words the edit replaced, (heard, meant); None when nothing was replaced
    (identical, or only words added or removed)."""
    before, after = old.split(), new.split()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "replace":
            return " ".join(before[a1:a2]).strip(".,;:!?"), " ".join(after[b1:b2]).strip(".,;:!?")
    return None


def with_replacement(replacements: str, heard: str, meant: str) -> str:
    """The `replacements` setting with `heard -> meant` added (once)."""
    line = f"{heard} -> {meant}"
    lines = [item for item in replacements.splitlines() if item.strip()]
    return "\n".join(lines if line in lines else [*lines, line])


def with_word(vocabulary: str, word: str) -> str:
    """The `vocabulary` setting with `word` added (once)."""
    words = [item for item in vocabulary.splitlines() if item.strip()]
    return "\n".join(words if word in words else [*words, word])


def difference_html(old: str, new: str) -> str:
    """`new` against `old` word by word: removed words struck out, added ones bold."""
    before, after = old.split(), new.split()
    parts: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            parts.append(html.escape(" ".join(before[a1:a2])))
            continue
        if a2 > a1:
            parts.append(f"<s>{html.escape(' '.join(before[a1:a2]))}</s>")
        if b2 > b1:
            parts.append(f"<b>{html.escape(' '.join(after[b1:b2]))}</b>")
    return " ".join(parts)
