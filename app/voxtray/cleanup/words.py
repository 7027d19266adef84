"""Content words: what clean-up must neither lose nor invent.

A text's content words are its words after Voxtray's English normaliser
(`voxtray.scoring.normalizer`): lower case, punctuation gone, contractions expanded
("I'm" and "I am" are the same words), numbers in digits ("twenty five" and "25" are the
same), British spellings American. Clean-up may change all of that. It may also drop
hesitation sounds and a word said twice in a row, so those are not content either.
Unlike the normaliser used for scoring, text in brackets counts: a model that adds
"(laughs)" or "[note: ...]" has added words.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from voxtray.scoring.normalizer import normalize_english

HESITATIONS = frozenset(
    {"ah", "ahh", "eh", "er", "erm", "hm", "hmm", "mhm", "mm", "mmm",
     "uh", "uhh", "uhm", "um", "umm"}
)  # fmt: skip
# Spellings the normaliser leaves apart that clean-up may rightly swap.
_SAME_WORDS = {"ok": ("okay",), "alright": ("all", "right"), "cannot": ("can", "not")}
_BRACKETS = str.maketrans({char: " " for char in "()[]{}<>"})


def content_words(text: str) -> list[str]:
    """The content words of `text`, in order."""
    normalized = normalize_english(text.translate(_BRACKETS))
    words: list[str] = []
    for word in normalized.split():
        if word in HESITATIONS:
            continue
        for part in _SAME_WORDS.get(word, (word,)):
            if not words or words[-1] != part:  # a stutter, "I I think", is one word
                words.append(part)
    return words


@dataclass(frozen=True)
class WordChange:
    """How the content words of an answer differ from the raw text's, by alignment: a
    word moved elsewhere counts as dropped and added."""

    total: int
    dropped: tuple[str, ...]
    added: tuple[str, ...]

    def dropped_share(self) -> float:
        return len(self.dropped) / max(1, self.total)

    def added_share(self) -> float:
        return len(self.added) / max(1, self.total)


def compare(raw: list[str], answer: list[str]) -> WordChange:
    matcher = difflib.SequenceMatcher(a=raw, b=answer, autojunk=False)
    dropped: list[str] = []
    added: list[str] = []
    for tag, raw_start, raw_end, answer_start, answer_end in matcher.get_opcodes():
        if tag != "equal":
            dropped.extend(raw[raw_start:raw_end])
            added.extend(answer[answer_start:answer_end])
    return WordChange(len(raw), tuple(dropped), tuple(added))
