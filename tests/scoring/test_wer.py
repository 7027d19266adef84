"""Tests for word error rate counting."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from voxtray.scoring.wer import WerResult, corpus_wer, word_errors


def _counts(result: WerResult) -> tuple[int, int, int, int, int]:
    return (
        result.errors,
        result.words,
        result.substitutions,
        result.deletions,
        result.insertions,
    )


@pytest.mark.parametrize(
    ("reference", "hypothesis", "counts"),
    [
        ("a b c", "a b c", (0, 3, 0, 0, 0)),
        ("a b c", "a x c", (1, 3, 1, 0, 0)),
        ("a b c", "a c", (1, 3, 0, 1, 0)),
        ("a b c", "a b x c", (1, 3, 0, 0, 1)),
        ("a b c", "", (3, 3, 0, 3, 0)),
        ("", "a b", (2, 0, 0, 0, 2)),
        ("", "", (0, 0, 0, 0, 0)),
        ("a b c", "x y z", (3, 3, 3, 0, 0)),
        ("the cat sat on the mat", "the cat sit on mat today", (3, 6, 1, 1, 1)),
        # Equal-cost alignments go to the fewest substitutions, as sclite's do.
        ("a b", "b a", (2, 2, 0, 1, 1)),
        ("a a a", "a", (2, 3, 0, 2, 0)),
    ],
)
def test_word_errors_counts_each_operation(
    reference: str, hypothesis: str, counts: tuple[int, int, int, int, int]
) -> None:
    assert _counts(word_errors(reference, hypothesis, normalize=False)) == counts


def test_rate_is_errors_over_reference_words() -> None:
    result = word_errors("the cat sat on the mat", "the cat sit on mat today")
    assert result.rate == pytest.approx(0.5)
    assert word_errors("", "").rate == 0.0
    assert word_errors("", "hello").rate == math.inf
    assert word_errors("a b", "c d e f", normalize=False).rate == pytest.approx(2.0)


def test_normalising_forgives_case_punctuation_and_number_style() -> None:
    reference = "Twenty-five percent of the colour, Mr. Smith!"
    hypothesis = "25% of the color mister smith"
    assert word_errors(reference, hypothesis).errors == 0
    raw = word_errors(reference, hypothesis, normalize=False)
    assert raw.errors > 0
    assert raw.words == 7


def test_normalising_shifts_word_counts_with_the_text() -> None:
    # "can't" is two words once expanded, so the reference has three words, not two.
    result = word_errors("I can't", "I can")
    assert _counts(result) == (1, 3, 0, 1, 0)


def test_corpus_wer_sums_errors_and_words() -> None:
    pairs = [
        ("one two three four five six seven eight nine ten", "1 2 3 4 5 6 7 8 9 10"),
        ("hello", "goodbye"),
        ("a b", "a b c"),
    ]
    total = corpus_wer(pairs)
    assert _counts(total) == (2, 13, 1, 0, 1)
    assert total.rate == pytest.approx(2 / 13)
    per_utterance = [word_errors(r, h).rate for r, h in pairs]
    assert total.rate != pytest.approx(sum(per_utterance) / len(per_utterance))


def test_corpus_wer_takes_any_iterable_and_an_empty_one() -> None:
    pairs = (("a b", "a c") for _ in range(3))
    assert _counts(corpus_wer(pairs, normalize=False)) == (3, 6, 3, 0, 0)
    empty = corpus_wer([])
    assert _counts(empty) == (0, 0, 0, 0, 0)
    assert empty.rate == 0.0


def test_results_add_and_are_frozen() -> None:
    total = word_errors("a b", "a", normalize=False) + word_errors("c", "d e", normalize=False)
    assert _counts(total) == (3, 3, 1, 1, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        total.errors = 0  # type: ignore[misc]


def _edit_distance(reference: list[str], hypothesis: list[str]) -> int:
    previous = list(range(len(hypothesis) + 1))
    for i, ref_word in enumerate(reference, start=1):
        current = [i]
        for j, hyp_word in enumerate(hypothesis, start=1):
            current.append(
                min(
                    previous[j] + 1,
                    current[j - 1] + 1,
                    previous[j - 1] + (ref_word != hyp_word),
                )
            )
        previous = current
    return previous[-1]


def test_counts_agree_with_a_plain_edit_distance() -> None:
    rng = random.Random(7)
    for _ in range(500):
        reference = [rng.choice("abcd") for _ in range(rng.randint(0, 8))]
        hypothesis = [rng.choice("abcd") for _ in range(rng.randint(0, 8))]
        result = word_errors(" ".join(reference), " ".join(hypothesis), normalize=False)
        assert result.errors == _edit_distance(reference, hypothesis)
        assert result.errors == result.substitutions + result.deletions + result.insertions
        assert result.words == len(reference)
        assert len(hypothesis) == result.words - result.deletions + result.insertions
