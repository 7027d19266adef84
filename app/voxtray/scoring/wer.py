"""Word error rate: word-level Levenshtein distance with its edit operations counted."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from voxtray.scoring.normalizer import normalize_english

__all__ = ["WerResult", "corpus_wer", "word_errors"]


@dataclass(frozen=True)
class WerResult:
    """Edit counts of a hypothesis against a reference, or summed over many pairs.

    Attributes:
        errors: Substitutions plus deletions plus insertions.
        words: Words in the reference(s).
        substitutions: Reference words replaced by a different word.
        deletions: Reference words missing from the hypothesis.
        insertions: Hypothesis words with no reference word.
    """

    errors: int
    words: int
    substitutions: int
    deletions: int
    insertions: int

    @property
    def rate(self) -> float:
        """Errors per reference word; with no reference words 0.0, or inf if there are errors."""
        if self.words == 0:
            return 0.0 if self.errors == 0 else math.inf
        return self.errors / self.words

    def __add__(self, other: WerResult) -> WerResult:
        return WerResult(
            errors=self.errors + other.errors,
            words=self.words + other.words,
            substitutions=self.substitutions + other.substitutions,
            deletions=self.deletions + other.deletions,
            insertions=self.insertions + other.insertions,
        )


_EMPTY = WerResult(errors=0, words=0, substitutions=0, deletions=0, insertions=0)

# One cell of the table: (cost, substitutions, deletions, insertions). Tuples compare on
# cost first, so among alignments of equal cost the one with fewest substitutions wins,
# as NIST sclite's weights choose: "the cat sat" against "cat sit today" is a deletion,
# a substitution and an insertion rather than three substitutions. Cost and substitutions
# then fix the other two counts, since deletions minus insertions is the length
# difference, so the counts do not depend on the order of the comparisons.
_Cell = tuple[int, int, int, int]


def _next_row(previous: list[_Cell], ref_word: str, hypothesis: Sequence[str]) -> list[_Cell]:
    first = previous[0]
    row: list[_Cell] = [(first[0] + 1, first[1], first[2] + 1, first[3])]
    for j, hyp_word in enumerate(hypothesis, start=1):
        diagonal = previous[j - 1]
        if hyp_word == ref_word:
            keep: _Cell = diagonal
        else:
            keep = (diagonal[0] + 1, diagonal[1] + 1, diagonal[2], diagonal[3])
        up, left = previous[j], row[j - 1]
        delete: _Cell = (up[0] + 1, up[1], up[2] + 1, up[3])
        insert: _Cell = (left[0] + 1, left[1], left[2], left[3] + 1)
        row.append(min(keep, delete, insert))
    return row


def _align(reference: Sequence[str], hypothesis: Sequence[str]) -> WerResult:
    row: list[_Cell] = [(j, 0, 0, j) for j in range(len(hypothesis) + 1)]
    for ref_word in reference:
        row = _next_row(row, ref_word, hypothesis)
    errors, substitutions, deletions, insertions = row[-1]
    return WerResult(errors, len(reference), substitutions, deletions, insertions)


def _words(text: str, normalize: bool) -> list[str]:
    return (normalize_english(text) if normalize else text).split()


def word_errors(reference: str, hypothesis: str, normalize: bool = True) -> WerResult:
    """Count the word edits that turn a reference into a hypothesis.

    Args:
        reference: The correct transcript.
        hypothesis: The recogniser's output.
        normalize: Pass both texts through ``normalize_english`` first; when false they
            are only split on whitespace, so case and punctuation count.

    Returns:
        The minimum number of edits, split into substitutions, deletions and insertions,
        and the number of reference words.
    """
    return _align(_words(reference, normalize), _words(hypothesis, normalize))


def corpus_wer(pairs: Iterable[tuple[str, str]], normalize: bool = True) -> WerResult:
    """Sum word errors and reference words over a set of utterances.

    The rate of the result is total errors over total words, so long utterances weigh
    more than short ones, unlike a mean of per-utterance rates.

    Args:
        pairs: ``(reference, hypothesis)`` pairs.
        normalize: As for ``word_errors``.

    Returns:
        The summed counts; all zero for no pairs.
    """
    total = _EMPTY
    for reference, hypothesis in pairs:
        total += word_errors(reference, hypothesis, normalize)
    return total
