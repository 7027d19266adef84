"""A guard around contextual biasing (`biasing.py`): a biased decode that says an entry
more often than the audio supports gives way to the model's own decode. (Entries made of
common words are left out before: `voxtray.text.vocabulary.split_common`.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from voxtray.inference.textguards import repeated_words

LONGER_SHARE = 0.3
LONGER_LETTERS = 6
"""A biased decode changes which words are heard, not how much is said: more letters than
the plain decode's by this share plus this many is speech the audio does not hold."""


def _words(text: str) -> list[str]:
    return ["".join(ch for ch in word if ch.isalnum()) for word in text.casefold().split()]


class EntryCounter:
    """How often each vocabulary entry is said in a text, word for word (case and
    punctuation aside)."""

    def __init__(self, entries: Iterable[str]) -> None:
        self._entries: dict[tuple[str, ...], str] = {}
        for entry in entries:
            key = tuple(word for word in _words(entry) if word)
            if key:
                self._entries.setdefault(key, entry)
        self._longest = max((len(key) for key in self._entries), default=0)

    def count(self, text: str) -> Counter[str]:
        words = [word for word in _words(text) if word]
        found: Counter[str] = Counter()
        for start in range(len(words)):
            for n in range(1, min(self._longest, len(words) - start) + 1):
                entry = self._entries.get(tuple(words[start : start + n]))
                if entry is not None:
                    found[entry] += 1
        return found


def worth_checking(counter: EntryCounter, biased: str) -> bool:
    """A biased text that says an entry twice or repeats itself: compare it with the
    plain decode before keeping it."""
    return repeated_words(biased) > 0 or any(n > 1 for n in counter.count(biased).values())


def supported(counter: EntryCounter, biased: str, plain: str) -> bool:
    """The biased text says no entry more often than the plain one, or says more of them
    only in place of other words: each at most once where the plain text had none, no
    repeat added, not much longer."""
    said, heard = counter.count(biased), counter.count(plain)
    if all(said[entry] <= heard[entry] for entry in said):
        return True
    if any(said[entry] > max(heard[entry], 1) for entry in said):
        return False  # "Terra Terra" for "ten of Terra": a bonus taken twice
    if repeated_words(biased) > repeated_words(plain):
        return False
    return _letters(biased) <= _letters(plain) * (1 + LONGER_SHARE) + LONGER_LETTERS


def _letters(text: str) -> int:
    return sum(ch.isalnum() for ch in text)
