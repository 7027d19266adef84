"""Number words in digits for the English normaliser: cardinals, ordinals, years, decimals,
multipliers, percentages and amounts of money, read from a list of words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

__all__ = ["CLAUSE_MARK", "standardize_numbers"]

# Clause punctuation, and full stops that are not decimal points, leave this mark while
# numbers are read so that one number does not run into the next. It is a private-use
# character, which ordinary text does not contain.
CLAUSE_MARK = "\ue000"

_DIGIT, _TEEN, _TENS, _HUNDRED, _BIG = "digit", "teen", "tens", "hundred", "big"

_CARDINALS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12,
}  # fmt: skip
_IRREGULAR_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fifth": 5, "eighth": 8, "ninth": 9, "twelfth": 12,
}  # fmt: skip
_CURRENCY_WORDS = {
    "dollar": "$", "dollars": "$", "pound": "£", "pounds": "£", "euro": "€", "euros": "€",
    "cent": "¢", "cents": "¢",
}  # fmt: skip
_ZERO_WORDS = frozenset({"oh", "o"})
_REPEATS = {"double": 2, "triple": 3}


@dataclass(frozen=True)
class _Word:
    kind: str  # _DIGIT, _TEEN, _TENS, _HUNDRED or _BIG
    value: int
    form: str = ""  # "", "ordinal" or "plural"


def _kind(value: int) -> str:
    if value < 10:
        return _DIGIT
    if value < 20:
        return _TEEN
    if value < 100:
        return _TENS
    return _HUNDRED if value == 100 else _BIG


def _ordinal_name(name: str) -> str:
    return name[:-1] + "ieth" if name.endswith("y") else name + "th"


def _build_lexicon() -> dict[str, _Word]:
    lexicon = {name: _Word(_kind(value), value) for name, value in _CARDINALS.items()}
    irregular = set(_IRREGULAR_ORDINALS.values())
    for name, value in _CARDINALS.items():
        if value > 0 and value not in irregular:
            lexicon[_ordinal_name(name)] = _Word(_kind(value), value, "ordinal")
        if value >= 20 and value % 10 == 0:
            # "twenties", "hundreds", "thousands": decades and round numbers in the plural.
            plural = name[:-1] + "ies" if name.endswith("y") else name + "s"
            lexicon[plural] = _Word(_kind(value), value, "plural")
    for name, value in _IRREGULAR_ORDINALS.items():
        lexicon[name] = _Word(_kind(value), value, "ordinal")
    return lexicon


_LEXICON = _build_lexicon()


def _word_at(words: list[str], index: int) -> _Word | None:
    return _LEXICON.get(words[index]) if index < len(words) else None


def _ordinal_suffix(value: int) -> str:
    if value % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(value % 10, "th")


# --- Spelled-out whole numbers --------------------------------------------------------------


@dataclass
class _Cardinal:
    total: int = 0
    current: int = 0  # the part below the last multiplier of a thousand or more
    last: str = ""  # the kind of the last word taken, or "and", "year" or "oh"
    big: int = 0  # the last multiplier of a thousand or more; the next must be smaller
    year: bool = False  # read as two pairs, "nineteen eighty": no multiplier may follow
    suffix: str = ""  # from an ordinal or plural word, which ends the number

    @property
    def value(self) -> int:
        return self.total + self.current


# Which words a digit, teen or tens word may follow. Nothing follows a digit but a
# multiplier, so "five five five" stays three numbers.
_TAKES_AFTER = {
    _DIGIT: ("", _TENS, _HUNDRED, _BIG, "and", "oh"),
    _TEEN: ("", _HUNDRED, _BIG, "and", "year"),
    _TENS: ("", _HUNDRED, _BIG, "and", "year"),
}


def _can_take(number: _Cardinal, word: _Word) -> bool:
    if word.kind == _DIGIT and word.value == 0:
        return number.last == ""
    if word.kind in _TAKES_AFTER:
        return number.last in _TAKES_AFTER[word.kind]
    if number.year:
        return False
    if word.kind == _HUNDRED:
        return number.last == "" or (number.last in _TAKES_AFTER and 0 < number.current < 100)
    below_big = number.big == 0 or word.value < number.big
    return below_big and (number.last == "" or number.current > 0)


def _take(number: _Cardinal, word: _Word) -> None:
    if word.kind == _HUNDRED:
        number.current = max(number.current, 1) * 100
    elif word.kind == _BIG:
        number.total += max(number.current, 1) * word.value
        number.current = 0
        number.big = word.value
    else:
        number.current += word.value
    number.last = word.kind
    if word.form == "ordinal":
        number.suffix = _ordinal_suffix(number.value)
    elif word.form == "plural":
        number.suffix = "s"


def _and_continues(number: _Cardinal, words: list[str], index: int) -> bool:
    # "one hundred and five", "two thousand and twenty"
    after = _word_at(words, index + 1)
    if words[index] != "and" or number.last not in (_HUNDRED, _BIG) or after is None:
        return False
    return after.kind in _TAKES_AFTER and after.value > 0


def _pair_done(number: _Cardinal) -> bool:
    # A lone 10..99 may be the first half of a year: "nineteen" before "eighty four".
    simple = not number.year and number.total == 0 and number.big == 0
    return simple and number.last in _TAKES_AFTER and 10 <= number.current <= 99


def _oh_in_year(number: _Cardinal, words: list[str], index: int) -> bool:
    # "nineteen oh five"
    after = _word_at(words, index + 1)
    if words[index] not in _ZERO_WORDS or after is None or not _pair_done(number):
        return False
    return after.kind == _DIGIT and after.value > 0


def _begin_year(number: _Cardinal, last: str) -> None:
    number.total, number.current = number.current * 100, 0
    number.year, number.last = True, last


def _read_cardinal(words: list[str], index: int) -> tuple[_Cardinal, int] | None:
    number = _Cardinal()
    start = index
    while index < len(words) and not number.suffix:
        word = _LEXICON.get(words[index])
        if _and_continues(number, words, index):
            number.last = "and"
        elif _oh_in_year(number, words, index):
            _begin_year(number, "oh")
        elif word is None:
            break
        elif word.kind in (_TEEN, _TENS) and _pair_done(number):
            _begin_year(number, "year")
            _take(number, word)
        elif _can_take(number, word):
            _take(number, word)
        else:
            break
        index += 1
    return (number, index) if index > start else None


# --- Number phrases: digits, fractions, multipliers, units -----------------------------------

_NUMERIC_TOKEN = re.compile(r"([$£€¢]?)(\d+(?:\.\d+)?|\.\d+)(%?)")


@dataclass
class _Number:
    text: str  # digits, perhaps with a decimal point
    prefix: str = ""  # currency sign
    suffix: str = ""  # "st", "nd", "rd", "th", "s" or "%"; nothing more attaches after it
    scalable: bool = False  # digits or a fraction, which a following "million" multiplies

    def render(self) -> str:
        return self.prefix + self.text + self.suffix


def _format_decimal(value: Decimal) -> str:
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _read_head(words: list[str], index: int) -> tuple[_Number, int] | None:
    match = _NUMERIC_TOKEN.fullmatch(words[index])
    if match is not None:
        prefix, digits, percent = match.groups()
        return _Number(digits, prefix, percent, scalable=True), index + 1
    found = _read_cardinal(words, index)
    if found is None:
        return None
    cardinal, index = found
    return _Number(str(cardinal.value), suffix=cardinal.suffix), index


def _decimal_digits(words: list[str], index: int) -> str:
    digits = []
    for word in words[index:]:
        entry = _LEXICON.get(word)
        if word in _ZERO_WORDS:
            digits.append("0")
        elif entry is not None and entry.kind == _DIGIT and not entry.form:
            digits.append(str(entry.value))
        else:
            break
    return "".join(digits)


def _read_fraction(number: _Number, words: list[str], index: int) -> int:
    # "five point five", "three point one four", "two and a half"
    if "." in number.text or number.prefix:
        return index
    if words[index : index + 3] == ["and", "a", "half"]:
        number.text = _format_decimal(Decimal(number.text) + Decimal("0.5"))
        number.scalable = True
        return index + 3
    digits = _decimal_digits(words, index + 1) if words[index : index + 1] == ["point"] else ""
    if not digits:
        return index
    number.text += "." + digits
    number.scalable = True
    return index + 1 + len(digits)


def _read_scale(number: _Number, words: list[str], index: int) -> int:
    # "2.5 million", "20 thousand"; spelled-out whole numbers took theirs already.
    word = _word_at(words, index)
    if not number.scalable or word is None or word.kind not in (_HUNDRED, _BIG) or word.form:
        return index
    value = Decimal(number.text)
    if value == 0:
        return index
    number.text = _format_decimal(value * word.value)
    return index + 1


def _read_cents(number: _Number, words: list[str], index: int) -> int:
    # "and" is required: without it a clause mark could fall between the amount and its
    # cents, and normalising the output again would join what the first pass did not.
    if "." in number.text or words[index : index + 1] != ["and"] or index + 1 >= len(words):
        return index
    found = _read_number(words, index + 1)
    if found is None:
        return index
    cents, end = found
    if cents.prefix != "¢" or cents.suffix or not cents.text.isdigit() or int(cents.text) > 99:
        return index
    number.text += f".{int(cents.text):02d}"
    return end


def _read_unit(number: _Number, words: list[str], index: int) -> int:
    if not number.prefix and words[index : index + 1] in (["%"], ["percent"]):
        number.suffix = "%"
        return index + 1
    if not number.prefix and words[index : index + 2] == ["per", "cent"]:
        number.suffix = "%"
        return index + 2
    symbol = _CURRENCY_WORDS.get(words[index]) if index < len(words) else None
    if symbol is not None and not number.prefix:
        number.prefix = symbol
        index += 1
    if number.prefix and number.prefix != "¢":
        index = _read_cents(number, words, index)
    return index


def _read_number(words: list[str], index: int) -> tuple[_Number, int] | None:
    found = _read_head(words, index)
    if found is None:
        return None
    number, index = found
    if not number.suffix:
        index = _read_fraction(number, words, index)
        index = _read_scale(number, words, index)
        index = _read_unit(number, words, index)
    return number, index


def _read_repeat(words: list[str], index: int) -> tuple[str, int] | None:
    # "double five" -> "5 5": write the extra copies and leave the "five" to be read as
    # usual, so that it may still take a unit ("double five percent" -> "5 5%").
    digit = _word_at(words, index + 1)
    times = _REPEATS.get(words[index])
    if times is None or digit is None or digit.kind != _DIGIT or digit.form:
        return None
    return " ".join([str(digit.value)] * (times - 1)), index + 1


# --- Putting numbers together ----------------------------------------------------------------


def _keep_mark(words: list[str], index: int) -> bool:
    # A clause mark is needed only between a word and a number word after it. Elsewhere it
    # must go, since the output has no marks: "20, percent" has to read as "20 percent"
    # does the second time round.
    after = words[index + 1] if index + 1 < len(words) else ""
    return after in _LEXICON and index > 0 and words[index - 1] != "and"


def _tidy_words(words: list[str]) -> list[str]:
    kept = [w for i, w in enumerate(words) if w != CLAUSE_MARK or _keep_mark(words, i)]
    # A "%" counts only after a number word ("twenty %"); digits took theirs already.
    return [w for i, w in enumerate(kept) if w != "%" or (i > 0 and kept[i - 1] in _LEXICON)]


def standardize_numbers(words: list[str]) -> list[str]:
    """Write the number words and phrases among normaliser words in digits.

    Args:
        words: Lower-case words without punctuation, where ``CLAUSE_MARK`` stands for a
            clause break, ``%`` and currency signs are words or sit next to digits.

    Returns:
        The words with each number read as one piece: ``"twenty five percent"`` ->
        ``"25%"``, ``"nineteen eighty four"`` -> ``"1984"``; the clause marks that are
        left still stand between words.
    """
    words = _tidy_words(words)
    out: list[str] = []
    index = 0
    while index < len(words):
        repeat = _read_repeat(words, index)
        number = _read_number(words, index) if repeat is None else None
        if repeat is not None:
            piece, index = repeat
        elif number is not None:
            piece, index = number[0].render(), number[1]
        else:
            piece, index = words[index], index + 1
        out.append(piece)
    return out
