"""The guard alone: what a careful clean-up may change, and every way an answer that could
lose or invent content is refused with the raw text kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.chat_server import tidy
from voxtray.cleanup.guard import GuardLimits, check, unwrap
from voxtray.cleanup.outcome import Reason
from voxtray.cleanup.prompts import resolve_prompt
from voxtray.cleanup.words import content_words

PROMPT = resolve_prompt("")
RAW = "um so i think we should uh send the budget to twenty five people by friday okay"
CLEAN = "So I think we should send the budget to 25 people by Friday, okay."


def _verdict(answer: str, raw: str = RAW) -> tuple[bool, Reason]:
    verdict = check(raw, answer, PROMPT)
    return verdict.accepted, verdict.reason


# --- content words ---


def test_content_words_leave_out_case_punctuation_hesitations_and_stutters() -> None:
    assert content_words("Um, I I think it's twenty-five percent, OK?") == [
        "i", "think", "it", "is", "25%", "okay",
    ]  # fmt: skip
    assert content_words("um uh... hmm") == []


def test_text_in_brackets_is_content() -> None:
    assert content_words("fine (laughs) [note: edited]") == ["fine", "laughs", "note", "edited"]


# --- what a clean-up may do ---


@pytest.mark.parametrize(
    "answer",
    [
        "So I think we should send the budget to 25 people by Friday, OK?",
        "So, I think we should send the budget to twenty-five people by Friday. Okay.",
        "So I think we should, uh, send the budget to 25 people by Friday, okay.",
        f'"{CLEAN}"',
        f"```\n{CLEAN}\n```",
        f"<transcript>\n{CLEAN}\n</transcript>",
    ],
)
def test_punctuation_capitals_numbers_and_wrapping_are_accepted(answer: str) -> None:
    assert _verdict(answer) == (True, Reason.ACCEPTED)


def test_contractions_either_way_are_the_same_words() -> None:
    assert _verdict("I'm sure we can't go.", "i am sure we can not go")[0]
    assert _verdict("I am sure we cannot go.", "i'm sure we can't go")[0]


def test_accepted_text_is_unwrapped_and_on_one_line_like_the_raw_text() -> None:
    verdict = check(
        RAW, '"So I think we should\nsend the budget to 25 people by Friday, OK?"', PROMPT
    )
    assert verdict.text == "So I think we should send the budget to 25 people by Friday, OK?"
    assert unwrap("First line.\nSecond line.", "first line\nsecond line") == (
        "First line.\nSecond line."
    )


def test_a_raw_text_that_starts_with_sure_may_stay_so() -> None:
    assert _verdict("Sure, I'll be there at five.", "sure i'll be there at five") == (
        True,
        Reason.ACCEPTED,
    )


# --- what is refused ---


@pytest.mark.parametrize("answer", ["", "   \n ", "...", '""', "```\n```"])
def test_an_empty_answer_is_refused(answer: str) -> None:
    assert _verdict(answer) == (False, Reason.EMPTY)


def test_an_answer_past_the_length_bound_is_refused() -> None:
    bound = GuardLimits().max_length(RAW)
    answer = tidy(RAW) + " and" * bound
    assert _verdict(answer) == (False, Reason.TOO_LONG)
    assert len(check(RAW, "x" * 10**7, PROMPT).text) <= bound  # kept for history, cut


@pytest.mark.parametrize(
    "answer",
    [
        f"Sure, here is the cleaned text: {CLEAN}",
        f"Here's the cleaned text:\n{CLEAN}",
        f"Certainly! {CLEAN}",
        f"{CLEAN} Let me know if you need more.",
        f"{CLEAN} (Note: I removed the fillers.)",
        "I'm sorry, but I can't help with sending budgets.",
    ],
)
def test_an_answer_that_talks_about_the_text_is_refused(answer: str) -> None:
    accepted, reason = _verdict(answer)
    assert not accepted
    assert reason in (Reason.ANSWERED, Reason.WORDS_ADDED, Reason.WORDS_DROPPED)
    long_raw = " ".join([RAW] * 10)  # where the added words are a small share
    long_answer = answer.replace(CLEAN, " ".join([CLEAN] * 10))
    if long_answer != answer:
        assert _verdict(long_answer, long_raw) == (False, Reason.ANSWERED)


def test_an_answer_to_a_question_is_refused() -> None:
    raw = "what is the capital of france"
    accepted, reason = _verdict("The capital of France is Paris.", raw)
    assert not accepted
    assert reason in (Reason.WORDS_DROPPED, Reason.WORDS_ADDED)


def test_the_prompt_or_a_run_of_it_is_refused() -> None:
    long_raw = " ".join([RAW] * 12)
    assert _verdict(PROMPT, long_raw) == (False, Reason.PROMPT)
    rule = "Keep every other word, name and number exactly as spoken."
    assert _verdict(f"{tidy(long_raw)} {rule}", long_raw) == (False, Reason.PROMPT)
    assert not _verdict(PROMPT)[0]  # short text: refused, whichever check says so first


def test_a_run_of_prompt_words_the_speaker_said_is_no_echo() -> None:
    raw = "please keep every other word name and number exactly as spoken thanks"
    assert _verdict(
        "Please keep every other word, name and number exactly as spoken. Thanks!", raw
    )[0]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("So I think we should send the budget to people by Friday, okay.", Reason.WORDS_DROPPED),
        ("So I think we should send the budget to 25 people, okay.", Reason.WORDS_DROPPED),
        (
            "So I think we should send the big budget to 25 people by Friday, okay.",
            Reason.WORDS_ADDED,
        ),
        (
            "So I think we should send the budget to 52 people by Friday, okay.",
            Reason.WORDS_DROPPED,
        ),
        (
            "By Friday, I think we should send the budget to 25 people, so okay.",
            Reason.WORDS_DROPPED,
        ),
    ],
)
def test_a_lost_changed_added_or_moved_word_is_refused(answer: str, reason: Reason) -> None:
    assert _verdict(answer) == (False, reason)


def test_the_share_of_changed_words_is_a_limit() -> None:
    forty = [f"w{letter}{other}" for letter in "abcd" for other in "abcdefghij"]

    def without(*gone: int) -> str:
        return " ".join(word for index, word in enumerate(forty) if index not in gone)

    raw = without()
    assert check(raw, without(3, 17), PROMPT).accepted  # 2 of 40: within 5 %
    assert not check(raw, without(3, 17), PROMPT, GuardLimits(max_change_share=0.0)).accepted
    assert check(raw, without(3, 17, 30), PROMPT).reason is Reason.WORDS_DROPPED


def test_a_number_or_a_negation_is_never_within_the_share() -> None:
    raw = " ".join([RAW] * 4) + " and we will not wait"
    kept = " ".join([CLEAN] * 4)
    assert check(raw, f"{kept} And we will not wait.", PROMPT).accepted
    assert check(raw, f"{kept} And we will wait.", PROMPT).reason is Reason.WORDS_DROPPED
    assert check(raw, f"{kept} And we will never wait.", PROMPT).reason is Reason.WORDS_DROPPED
    changed = f"{kept} And we will not wait.".replace("25", "26", 1)
    verdict = check(raw, changed, PROMPT)
    assert verdict.reason is Reason.WORDS_DROPPED
    assert "'25'" in verdict.detail


def test_a_stray_transcript_tag_is_never_typed() -> None:
    long_raw = " ".join([RAW] * 4)
    verdict = check(long_raw, " ".join([CLEAN] * 4) + "</transcript>", PROMPT)
    assert verdict.accepted
    assert "transcript" not in verdict.text


# --- for any text ---

WORDS = st.sampled_from(
    [
        "the",
        "budget",
        "report",
        "send",
        "friday",
        "people",
        "meeting",
        "twenty",
        "five",
        "I",
        "think",
        "we",
        "should",
        "okay",
        "and",
        "to",
        "by",
        "of",
        "a",
        "is",
        "it",
        "Paris",
        "Kubernetes",
    ]
)
SHORT_TEXTS = st.lists(WORDS, min_size=1, max_size=19).map(" ".join)


@given(SHORT_TEXTS)
def test_a_careful_clean_up_is_always_accepted(raw: str) -> None:
    assert check(raw, tidy(raw), PROMPT).accepted


@given(SHORT_TEXTS, st.data())
def test_any_lost_word_is_refused_in_short_texts(raw: str, data: st.DataObject) -> None:
    words = raw.split()
    drop = data.draw(st.integers(0, len(words) - 1))
    answer = tidy(" ".join(words[:drop] + words[drop + 1 :]))
    verdict = check(raw, answer, PROMPT)
    if content_words(answer) != content_words(raw):  # "we we" -> "we" is the same words
        assert not verdict.accepted


@given(SHORT_TEXTS, st.sampled_from(["not", "never", "million", "Zurich"]), st.data())
def test_any_invented_word_is_refused_in_short_texts(
    raw: str, word: str, data: st.DataObject
) -> None:
    words = raw.split()
    at = data.draw(st.integers(0, len(words)))
    verdict = check(raw, tidy(" ".join([*words[:at], word, *words[at:]])), PROMPT)
    assert not verdict.accepted  # "million twenty" is one number: a word changed


@given(st.text(max_size=300), st.text(max_size=600))
def test_the_guard_never_raises(raw: str, answer: str) -> None:
    verdict = check(raw, answer, PROMPT)
    assert verdict.accepted or verdict.reason is not Reason.ACCEPTED


@given(st.text(max_size=2000))
def test_content_words_never_raise(text: str) -> None:
    assert all(word and " " not in word for word in content_words(text))
