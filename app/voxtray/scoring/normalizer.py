"""English text normaliser for scoring speech-to-text output, after Whisper's rules.

The steps follow OpenAI Whisper's English text normaliser (the code is written afresh):
lower-case; drop text in brackets and parentheses and the fillers hmm, mm, mhm, mmm, uh
and um; expand contractions and titles; strip punctuation, symbols and diacritics; write
numbers in digits; map British spellings to American ones; collapse whitespace. The
reference and the hypothesis go through the same function, so consistency between the
two matters more than a perfect reading of either.

Departures from Whisper, each for that consistency:

* ``one`` becomes ``1`` everywhere (Whisper writes a lone ``1`` back as ``one``).
* Single digits in a row stay apart: ``five five five`` -> ``5 5 5``, as ``5, 5, 5``
  reads (Whisper glues them into ``555``). Pairs still read as years:
  ``nineteen eighty four`` -> ``1984``.
* Clause punctuation (``, ; : ! ? …`` and full stops) keeps two numbers apart:
  ``twenty, twenty one`` -> ``20 21``, as ``20, 21`` reads, not the year ``2021``.
* Amounts of cents join an amount only with "and": ``$20 and 50 cents`` -> ``$20.50``
  but ``twenty dollars fifty cents`` -> ``$20 ¢50``.
* Curly apostrophes count as straight ones, ``1990's`` means the decade ``1990s``, and
  ``20 %`` and ``$ 20`` join up like ``20%`` and ``$20``.
* The output is idempotent: normalising it again changes nothing.

Apostrophes: as in Whisper, ``'s`` expands to ``is`` (``john's`` -> ``john is``), so the
possessive and the contraction in ``it's`` read alike and scores stay comparable with
published Whisper-normalised word error rates. Every apostrophe the contraction rules
leave becomes a space (``o'clock`` -> ``o clock``).

Not done: Whisper's "minus"/"plus" signs, fractions other than "and a half", and
"pence"/"p" currency. Hyphens split words as in Whisper (``e-mail`` -> ``e mail``).
"""

from __future__ import annotations

import re
import unicodedata

from voxtray.scoring.numbers import CLAUSE_MARK, standardize_numbers
from voxtray.scoring.spellings import BRITISH_TO_AMERICAN

__all__ = ["BRITISH_TO_AMERICAN", "normalize_english"]

# --- Brackets, contractions, titles, symbols ---------------------------------------------

_BRACKETED = re.compile(r"[<\[][^>\]]*[>\]]|\([^)]*\)")
_FILLER_WORDS = frozenset({"hmm", "mm", "mhm", "mmm", "uh", "um"})
_CURLY_APOSTROPHES = re.compile(r"[’‘ʼ]")
_SPACE_BEFORE_APOSTROPHE = re.compile(r"\s+'")
# "the 1990's" is the decade, like "the 1990s", not "the 1990 is".
_DECADE_APOSTROPHE = re.compile(r"(?<=\d)'s\b")

_TITLES = {
    "mr": "mister", "mrs": "missus", "st": "saint", "dr": "doctor", "prof": "professor",
    "capt": "captain", "gov": "governor", "ald": "alderman", "gen": "general",
    "sen": "senator", "rep": "representative", "pres": "president", "rev": "reverend",
    "hon": "honorable", "asst": "assistant", "assoc": "associate", "lt": "lieutenant",
    "col": "colonel", "jr": "junior", "sr": "senior", "esq": "esquire",
}  # fmt: skip

# Order matters: whole words first, then the perfect tenses (where 's and 'd mean has and
# had), then the endings that are left.
_CONTRACTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"\bwon't\b", "will not"),
        (r"\bcan't\b", "can not"),
        (r"\bshan't\b", "shall not"),
        (r"\blet's\b", "let us"),
        (r"\bain't\b", "aint"),
        (r"\by'all\b", "you all"),
        (r"\bwanna\b", "want to"),
        (r"\bgotta\b", "got to"),
        (r"\bgonna\b", "going to"),
        (r"\bi'ma\b", "i am going to"),
        (r"\bimma\b", "i am going to"),
        (r"\bwoulda\b", "would have"),
        (r"\bcoulda\b", "could have"),
        (r"\bshoulda\b", "should have"),
        (r"\bma'am\b", "madam"),
        # The abbreviation's full stop goes with it, so "mr." ends no clause.
        *((rf"\b{short}\b\.?", f"{long} ") for short, long in _TITLES.items()),
        (r"'d been\b", " had been"),
        (r"'s been\b", " has been"),
        (r"'d gone\b", " had gone"),
        (r"'s gone\b", " has gone"),
        (r"'d done\b", " had done"),
        (r"'s got\b", " has got"),
        (r"n't\b", " not"),
        (r"'re\b", " are"),
        (r"'s\b", " is"),
        (r"'d\b", " would"),
        (r"'ll\b", " will"),
        (r"'t\b", " not"),
        (r"'ve\b", " have"),
        (r"'m\b", " am"),
    )
)

_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d)")
# Clause punctuation, and full stops that are not decimal points, keep numbers apart.
_CLAUSE_BREAK = re.compile(r"[,;:!?…]|\.(?!\d)")
_NUMERIC_SYMBOLS = frozenset(".%$¢€£")
# Letters that Unicode decomposition does not split into a base letter and marks.
_LETTER_FOLDS = {
    "æ": "ae", "œ": "oe", "ø": "o", "ß": "ss", "ł": "l", "đ": "d", "ð": "d", "þ": "th",
    "ı": "i", "ŋ": "n", "ħ": "h", "ŧ": "t",
}  # fmt: skip
_STRAY_SIGN = re.compile(r"[.$¢€£](?!\d)|(?<!\d)%")


def _expand_contractions(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def _fold_char(char: str) -> str:
    if char in _NUMERIC_SYMBOLS or char == CLAUSE_MARK:
        return char
    if char in _LETTER_FOLDS:
        return _LETTER_FOLDS[char]
    category = unicodedata.category(char)
    if category == "Mn":
        return ""
    if category[0] in "MSP" or (category[0] == "C" and not char.isspace()):
        return " "
    return char


def _strip_symbols(text: str) -> str:
    return "".join(_fold_char(c) for c in unicodedata.normalize("NFKD", text))


# --- Letters, digits and signs ------------------------------------------------------------

_LETTER_THEN_DIGIT = re.compile(r"(?<=[^\W\d_])(?=\d)")
_DIGIT_THEN_LETTER = re.compile(r"(?<=\d)(?=[^\W\d_])")
_SPLIT_SUFFIX = re.compile(r"(?<=\d) (st|nd|rd|th|s)\b")
_GLUED_CURRENCY = re.compile(r"(?<=\S)(?=[$£€¢])")
_SPACED_CURRENCY = re.compile(r"([$£€¢]) +(?=\d)")
_STRAY_CURRENCY = re.compile(r"[$£€¢](?!\d)")
_SPACED_PERCENT = re.compile(r"(?<=\d) +%")


def _split_letters_and_digits(text: str) -> str:
    # "covid19" -> "covid 19" and "3pm" -> "3 pm", but "21st" and "1980s" stay whole.
    text = _LETTER_THEN_DIGIT.sub(" ", text)
    text = _DIGIT_THEN_LETTER.sub(" ", text)
    return _SPLIT_SUFFIX.sub(r"\1", text)


def _separate_signs(text: str) -> str:
    # Each sign becomes a word of its own unless it belongs to the digits beside it. A sign
    # with no digits after it goes now: left in place, it would keep apart words that meet
    # once it is gone, and normalising the output again would read them differently.
    text = _GLUED_CURRENCY.sub(" ", text.replace("%", " % "))
    text = _STRAY_CURRENCY.sub(" ", _SPACED_CURRENCY.sub(r"\1", text))
    return _SPACED_PERCENT.sub("%", text)


def normalize_english(text: str) -> str:
    """Normalise English text for word error rate scoring, after Whisper's rules.

    Args:
        text: A reference transcript or a recogniser's output, in any case, with or
            without punctuation.

    Returns:
        Lower-case words and numbers separated by single spaces. Besides letters and
        digits only the decimal point, ``%`` and the currency signs ``$ ¢ € £`` remain,
        each next to digits: ``"Twenty-five percent of $1,000"`` becomes
        ``"25% of $1000"``. Normalising the result again returns it unchanged.
    """
    text = _BRACKETED.sub(" ", text.lower())
    text = _CURLY_APOSTROPHES.sub("'", text)
    text = _DECADE_APOSTROPHE.sub("s", _SPACE_BEFORE_APOSTROPHE.sub("'", text))
    text = _expand_contractions(_split_letters_and_digits(text))
    text = _CLAUSE_BREAK.sub(f" {CLAUSE_MARK} ", _DIGIT_COMMA.sub("", text))
    text = _separate_signs(_split_letters_and_digits(_strip_symbols(text)))
    # Fillers go after symbols, so "um," and "uh-huh" lose theirs too.
    words = standardize_numbers([w for w in text.split() if w not in _FILLER_WORDS])
    words = [BRITISH_TO_AMERICAN.get(w, w) for w in words if w != CLAUSE_MARK]
    text = _STRAY_SIGN.sub(" ", " ".join(words))
    return _SPLIT_SUFFIX.sub(r"\1", " ".join(text.split()))
