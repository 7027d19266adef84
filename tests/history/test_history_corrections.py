"""What an edit teaches (corrections) and the word difference of a re-run."""

from __future__ import annotations

import pytest

from voxtray.history.corrections import correction, difference_html, with_replacement, with_word


@pytest.mark.parametrize(
    ("old", "new", "learnt"),
    [
        ("meet with jon tomorrow", "meet with Jean tomorrow", ("jon", "Jean")),
        ("ask cube control.", "ask kubectl.", ("cube control", "kubectl")),
        ("same text", "same text", None),
        ("words", "words added", None),
        ("", "new", None),
    ],
)
def test_correction_is_the_replaced_words(
    old: str, new: str, learnt: tuple[str, str] | None
) -> None:
    assert correction(old, new) == learnt


def test_settings_text_gains_each_correction_once() -> None:
    once = with_replacement("a -> b\n", "jon", "Jean")
    assert once == "a -> b\njon -> Jean"
    assert with_replacement(once, "jon", "Jean") == once
    assert with_word("", "Jean") == "Jean"
    assert with_word("Jean", "Jean") == "Jean"


def test_difference_marks_removed_and_added_words_escaped() -> None:
    html = difference_html("send <it> to jon", "send <it> to Jean")
    assert html == "send &lt;it&gt; to <s>jon</s> <b>Jean</b>"
