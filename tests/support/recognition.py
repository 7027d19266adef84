"""Recognised text held against what was said: a word error rate within a stated bound,
never an exact string.

int8 matrix kernels round differently with and without VNNI or AVX-512, and the engines
and precisions each move a word now and then, so an exact transcript holds on one CPU
only. Each bound here says how many words may be wrong, why that covers every
configuration measured, and what it still catches."""

from __future__ import annotations

from voxtray.scoring.normalizer import normalize_english
from voxtray.scoring.wer import word_errors

BIRCH = "the birch canoe slid on the smooth planks"
"""What harvard_sb_example1, the clip most tests dictate, says."""

BELLY_CLIP = "ls_1089-134686-0001"
"""3.3 s, the self-test's clip too (resources/selftest.wav)."""
BELLY = "stuff it into you his belly counselled him"
"""What BELLY_CLIP says."""

SENTENCE_WER = 0.25
"""For one short read sentence of tests/data/speech (4 to 22 words).

Measured on whisper-tiny.en in fp32, int8 and reduced-range int8 on the ort and sherpa
engines, with and without VNNI, and on whisper-base (tests/data/commands/README.md has
the table): the Harvard sentence most tests dictate came out with at most one word of its
eight wrong, the 16-word ljspeech_LJ050-0131 with three ("thereunder" as "they're
under"), jfk_inaugural with five of 22 where the ort engine typed a phrase twice. A
quarter leaves room for a word more on a CPU not measured, and still fails a recogniser
that drops a third of the sentence, types another clip's words, or nothing."""


BELLY_WER = 0.4
"""For BELLY through whisper-tiny.en, which writes "Stuffered into you" for "Stuff it into
you" on the ort engine, with and without VNNI (2 of 8 words wrong; whisper-base writes
"couched with" for "counselled", 4 of 8): one word more than tiny.en gets wrong is allowed,
and a decoder that reads half the sentence wrong still fails."""


def words(text: str) -> list[str]:
    """The text's words as they are scored: normalised, without punctuation."""
    return normalize_english(text).split()


def heard(reference: str, text: str, bound: float) -> bool:
    """Whether `text` is `reference` with at most `bound` of its words wrong."""
    return word_errors(reference, text).rate <= bound


def assert_heard(reference: str, text: str, bound: float) -> None:
    """Fail, naming both texts, if more than `bound` of the reference's words are wrong."""
    errors = word_errors(reference, text)
    assert errors.rate <= bound, (
        f"{errors.errors} of {errors.words} words wrong ({errors.rate:.0%}, at most "
        f"{bound:.0%} allowed): heard {text!r} for {reference!r}"
    )


def begins_with(reference: str, text: str, count: int = 3, wrong: int = 1) -> bool:
    """Whether the text's first `count` words are the reference's first `count`, at most
    `wrong` of them wrong: the start of what was said was kept (or typed first)."""
    expected = " ".join(words(reference)[:count])
    return word_errors(expected, " ".join(words(text)[:count])).errors <= wrong


def assert_begins(reference: str, text: str, count: int = 3, wrong: int = 1) -> None:
    """Fail, naming both texts, unless `begins_with(reference, text, count, wrong)`."""
    expected = " ".join(words(reference)[:count])
    assert begins_with(reference, text, count, wrong), f"{text!r} does not begin {expected!r}"
