"""Tests for the Whisper-style English text normaliser."""

from __future__ import annotations

import csv
import random
import re

import pytest

from tests.support.audio import MANIFEST
from voxtray.scoring.normalizer import BRITISH_TO_AMERICAN, normalize_english

ALLOWED_OUTPUT = re.compile(r"[a-z0-9 .%$¢€£]*")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("twenty five", "25"),
        ("twenty-five", "25"),
        ("one hundred and five", "105"),
        ("two thousand and twenty", "2020"),
        ("one thousand two hundred and thirty four", "1234"),
        ("two million three hundred thousand", "2300000"),
        ("twelve hundred", "1200"),
        ("five point five", "5.5"),
        ("three point one four", "3.14"),
        ("zero point five", "0.5"),
        ("two point five million", "2500000"),
        ("20 million", "20000000"),
        ("one and a half", "1.5"),
        ("twenty first", "21st"),
        ("third", "3rd"),
        ("eleventh", "11th"),
        ("twenty second", "22nd"),
        ("a hundred and first", "a 101st"),
        ("one hundredth", "100th"),
        ("twenty percent", "20%"),
        ("twenty per cent", "20%"),
        ("20 percent", "20%"),
        ("20 %", "20%"),
        ("20%", "20%"),
        ("$20", "$20"),
        ("$ 20", "$20"),
        ("twenty dollars", "$20"),
        ("one dollar", "$1"),
        ("five pounds", "£5"),
        ("ten euros", "€10"),
        ("fifty cents", "¢50"),
        ("twenty dollars and fifty cents", "$20.50"),
        ("$20 and 5 cents", "$20.05"),
        ("one", "1"),
        ("no one came", "no 1 came"),
        ("five five five", "5 5 5"),
        ("5, 5, 5", "5 5 5"),
        ("five, five, five", "5 5 5"),
        ("one two three", "1 2 3"),
        ("zero zero seven", "0 0 7"),
        ("double seven", "7 7"),
        ("five and five", "5 and 5"),
        ("nineteen eighty four", "1984"),
        ("IN EIGHTEEN THIRTEEN", "in 1813"),
        ("twenty twenty one", "2021"),
        ("nineteen oh five", "1905"),
        ("the nineteen eighties", "the 1980s"),
        ("the 1980's", "the 1980s"),
        ("the sixties", "the 60s"),
        ("thousands of people", "1000s of people"),
        ("twenty, twenty one, twenty two", "20 21 22"),
        ("1,000 people", "1000 people"),
        ("It cost 3.50.", "it cost 3.50"),
        ("covid19", "covid 19"),
        ("the 21 st", "the 21st"),
        ("EIGHT THE PRESS YARD", "8 the press yard"),
    ],
)
def test_numbers_become_digits(text: str, expected: str) -> None:
    assert normalize_english(text) == expected


@pytest.mark.parametrize(
    ("spoken", "written"),
    [
        ("Twenty-five percent of one thousand dollars", "25% of $1,000"),
        ("nineteen eighty-four", "1984"),
        ("the twenty first century", "the 21st century"),
        ("five, five, five", "5, 5, 5"),
        ("five five five", "5 5 5"),
        ("three point one four", "3.14"),
        ("two thousand and twenty", "2020"),
        ("two and a half million", "2.5 million"),
        ("twenty dollars and fifty cents", "$20.50"),
    ],
)
def test_spoken_and_written_numbers_agree(spoken: str, written: str) -> None:
    assert normalize_english(spoken) == normalize_english(written)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I won't go", "i will not go"),
        ("you can't", "you can not"),
        ("they don't", "they do not"),
        ("we're here", "we are here"),
        ("she'll see", "she will see"),
        ("I've been", "i have been"),
        ("I'm sure", "i am sure"),
        ("let's go", "let us go"),
        ("it's fine", "it is fine"),
        ("he's been there", "he has been there"),
        ("she'd gone", "she had gone"),
        ("he'd say", "he would say"),
        ("y'all gonna wanna", "you all going to want to"),
        ("don’t", "do not"),
        ("john's car", "john is car"),
        ("the boys' toys", "the boys toys"),
        ("five o'clock", "5 o clock"),
    ],
)
def test_contractions_expand(text: str, expected: str) -> None:
    assert normalize_english(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mr. Smith", "mister smith"),
        ("Mr quilter", "mister quilter"),
        ("Mrs Jones", "missus jones"),
        ("Dr. Who", "doctor who"),
        ("St. Paul", "saint paul"),
        ("Prof. Lee Jr.", "professor lee junior"),
    ],
)
def test_titles_expand(text: str, expected: str) -> None:
    assert normalize_english(text) == expected


@pytest.mark.parametrize(
    ("british", "american"),
    [
        ("colour", "color"),
        ("colours", "colors"),
        ("favourite", "favorite"),
        ("realise", "realize"),
        ("realised", "realized"),
        ("organisation", "organization"),
        ("analysed", "analyzed"),
        ("centre", "center"),
        ("theatre", "theater"),
        ("metres", "meters"),
        ("travelling", "traveling"),
        ("counselled", "counseled"),
        ("grey", "gray"),
        ("neighbour's", "neighbor is"),
        ("dishonoured", "dishonored"),
        ("defence", "defense"),
        ("catalogue", "catalog"),
        ("aluminium", "aluminum"),
        ("programme", "program"),
        ("jewellery", "jewelry"),
        ("manoeuvre", "maneuver"),
        ("Colourful Theatres", "colorful theaters"),
    ],
)
def test_british_spellings_become_american(british: str, american: str) -> None:
    assert normalize_english(british) == american


@pytest.mark.parametrize(
    "word",
    [
        "advise", "surprise", "promise", "exercise", "analyses", "acre", "massacre", "hour",
        "tour", "humorous", "compelled", "controlled", "rebelled", "cancellation",
    ],
)  # fmt: skip
def test_words_spelt_alike_everywhere_are_left_alone(word: str) -> None:
    assert normalize_english(word) == word


def test_spelling_map_is_lower_case_and_settled() -> None:
    assert len(BRITISH_TO_AMERICAN) >= 300
    assert all(re.fullmatch(r"[a-z]+", k) for k in BRITISH_TO_AMERICAN)
    assert all(re.fullmatch(r"[a-z]+", v) for v in BRITISH_TO_AMERICAN.values())
    # No American form is itself mapped on, so the map applied twice equals applied once.
    assert not set(BRITISH_TO_AMERICAN) & set(BRITISH_TO_AMERICAN.values())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, world! How are you?", "hello world how are you"),
        ('He said: "stop"; then left...', "he said stop then left"),
        ("well-known e-mail", "well known e mail"),
        ("U.S.A.", "u s a"),
        ("A+B=C & D/E #1 @home", "a b c d e 1 home"),
        ("  lots \t of\n\nspace  ", "lots of space"),
        ("", ""),
        ("?!", ""),
        ("$ and %", "and"),
    ],
)
def test_punctuation_and_symbols_go(text: str, expected: str) -> None:
    assert normalize_english(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[laughter] hello (inaudible) there <noise>", "hello there"),
        ("keep [this out] and (that) too", "keep and too"),
        ("Um, I uh think hmm so", "i think so"),
        ("mhm mm mmm yes", "yes"),
        ("uh-huh", "huh"),
        ("umbrella hummus", "umbrella hummus"),
        ("twenty um five", "25"),
    ],
)
def test_brackets_and_fillers_go(text: str, expected: str) -> None:
    assert normalize_english(text) == expected


def test_diacritics_are_stripped_but_letters_kept() -> None:
    assert normalize_english("Café naïve façade Ærø Straße Łódź") == (
        "cafe naive facade aero strasse lodz"
    )


def test_mixed_case_references_agree_with_lower_case_hypotheses() -> None:
    reference = "He began a confused complaint against the wizard, who had vanished."
    assert normalize_english(reference) == normalize_english(
        "he began a confused complaint against the wizard who had vanished"
    )


def _random_text(rng: random.Random, vocabulary: list[str]) -> str:
    separator = rng.choice([" ", " ", ""])
    return separator.join(rng.choice(vocabulary) for _ in range(rng.randint(1, 8)))


def test_normalising_twice_changes_nothing() -> None:
    vocabulary = [
        "zero", "one", "two", "five", "nine", "ten", "twelve", "nineteen", "twenty", "eighty",
        "hundred", "thousand", "million", "first", "second", "twentieth", "hundredth",
        "twenties", "thousands", "and", "a", "half", "point", "oh", "o", "double", "percent",
        "per", "cent", "cents", "dollars", "pounds", "$", "%", "£", "5", "20", "1.5", "$3",
        "¢7", "80s", "1st", "21", "st", "nd", "Mr", "it's", "won't", "um", ",", ".", ";", "!",
        "-", "'", "colour", "the", "covid19", "mp3", "[x]", "(y)", "é",
    ]  # fmt: skip
    rng = random.Random(20240601)
    for _ in range(3000):
        text = _random_text(rng, vocabulary)
        once = normalize_english(text)
        assert normalize_english(once) == once, text
        assert ALLOWED_OUTPUT.fullmatch(once), text


def _manifest_references() -> list[tuple[str, str]]:
    with MANIFEST.open(newline="", encoding="utf-8") as handle:
        rows = csv.DictReader(handle, delimiter="\t")
        return [(row["id"], row["reference"]) for row in rows]


def test_manifest_references_normalise_cleanly() -> None:
    references = _manifest_references()
    assert references
    for clip_id, reference in references:
        once = normalize_english(reference)
        assert once, clip_id
        assert ALLOWED_OUTPUT.fullmatch(once), (clip_id, once)
        assert once == " ".join(once.split()), clip_id
        assert normalize_english(once) == once, (clip_id, once)


def test_manifest_references_read_as_expected() -> None:
    normalised = {clip_id: normalize_english(text) for clip_id, text in _manifest_references()}
    expected = {
        "ls_1089-134686-0001": "stuff it into you his belly counseled him",
        "ls_1272-128104-0000_leopard": (
            "mister quilter is the apostle of the middle classes and we are glad to welcome "
            "his gospel"
        ),
        "ljspeech_LJ002-0020": "in 1813",
        "ljspeech_LJ002-0035": "8 the press yard",
        "ami_ES2011a_40s-46s": "i am abigail claflin you can call me abbie",
        "uberi_one_two_three": "1 2 3",
    }
    present = [clip_id for clip_id in expected if clip_id in normalised]
    assert present, "none of the expected clips is in the manifest any more"
    for clip_id in present:
        assert normalised[clip_id] == expected[clip_id]
