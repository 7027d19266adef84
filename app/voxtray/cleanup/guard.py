"""The guard between a clean-up answer and the window: an answer that could have lost or
invented content is refused, and the raw text is delivered instead.

An answer is refused when it is empty, longer than a bound, answers or comments on the
text instead of cleaning it ("Sure, here is..."), contains a run of the prompt's words,
or drops or adds more than a set share of the raw text's content words
(`voxtray.cleanup.words`), or any number or negation ("not", "never"), which would turn
the meaning round however long the text. What passes is the answer with the wrapping a model may put
around it (quotes, code fences, the transcript tags) taken off, and no line breaks the
raw text did not have: a line break typed into a chat sends the message.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from voxtray.cleanup.outcome import Reason
from voxtray.cleanup.words import WordChange, compare, content_words

# Phrases of an assistant talking about the text rather than the text itself, as the
# content words they normalise to. Each counts only where the raw text lacks it.
ASSISTANT_OPENINGS = (
    "sure", "certainly", "of course", "absolutely", "here is", "here are", "below is",
    "the cleaned", "the corrected", "cleaned text", "corrected text", "i have", "i can not",
    "i am sorry", "sorry", "as an ai", "note", "okay here", "okay so here",
)  # fmt: skip
ASSISTANT_PHRASES = (
    "here is the", "here is your", "the cleaned", "cleaned up version", "cleaned version",
    "cleaned text", "corrected text", "cleaned transcript", "corrected transcript",
    "the transcript", "let me know", "i hope this helps", "as an ai", "language model",
    "i removed", "i have removed", "i corrected", "i have corrected", "i added",
    "i have added", "i kept", "i fixed", "no changes were", "note i",
)  # fmt: skip
PROMPT_RUN = 5  # this many prompt words in a row, absent from the raw text, is the prompt
# Words whose loss or addition turns the meaning round, however long the text: refused
# even within the share (and so is any number).
NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "nobody", "neither", "nor"})
_FENCE = re.compile(r"^```[\w-]*\n?(.*?)\n?```$", re.DOTALL)
_TAGS = re.compile(r"</?transcript>", re.IGNORECASE)
_QUOTES = (('"', '"'), ("“", "”"), ("'", "'"), ("«", "»"))
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class GuardLimits:
    """`max_change_share`: the most content words, as a share of the raw text's, that an
    answer may drop, and separately add, rounded down (0.05: none below 20 words, one in
    20 to 39), never a number or a negation; `length_ratio` and `length_slack`: the
    longest answer, in characters, is raw * ratio + slack."""

    max_change_share: float = 0.05
    length_ratio: float = 1.5
    length_slack: int = 20

    def max_length(self, raw: str) -> int:
        return int(len(raw) * self.length_ratio) + self.length_slack


@dataclass(frozen=True)
class Verdict:
    """The guard's answer: `text` is the cleaned text when `accepted`; otherwise `reason`
    and `detail` (one line, without the text) say why not."""

    accepted: bool
    text: str
    reason: Reason
    detail: str
    change: WordChange | None = None


def unwrap(answer: str, raw: str) -> str:
    """The answer without the wrapping a model may add and the raw text did not have."""
    text = _CONTROLS.sub("", answer.replace("\r\n", "\n")).strip()
    if fenced := _FENCE.match(text):
        text = fenced.group(1).strip()
    if "transcript>" not in raw.lower():
        text = _TAGS.sub(" ", text).strip()
    for opening, closing in _QUOTES:
        quoted = text.startswith(opening) and text.endswith(closing) and len(text) > 1
        if quoted and not raw.strip().startswith(opening):
            text = text[len(opening) : -len(closing)].strip()
            break
    if "\n" not in raw:
        text = " ".join(text.split())
    return text


def check(raw: str, answer: str, prompt: str, limits: GuardLimits | None = None) -> Verdict:
    """Whether `answer` may replace `raw`; never raises for any answer."""
    limits = limits or GuardLimits()
    if len(answer) > 4 * limits.max_length(raw):  # not worth reading further
        return _refused(answer[: limits.max_length(raw)], Reason.TOO_LONG, _longer(answer, raw))
    text = unwrap(answer, raw)
    if not text:
        return _refused(text, Reason.EMPTY, "the answer was empty")
    if len(text) > limits.max_length(raw):
        return _refused(text, Reason.TOO_LONG, _longer(text, raw))
    raw_words, answer_words = content_words(raw), content_words(text)
    if not answer_words:
        return _refused(text, Reason.EMPTY, "the answer had no words")
    if _has_prompt_run(_prompt_runs(prompt), raw_words, answer_words):
        return _refused(text, Reason.PROMPT, "the answer contains the prompt")
    if phrase := _assistant_phrase(raw_words, answer_words):
        return _refused(text, Reason.ANSWERED, f"it answered instead of cleaning ({phrase!r})")
    change = compare(raw_words, answer_words)
    allowed = int(limits.max_change_share * len(raw_words))
    if len(change.dropped) > allowed or _turns_meaning(change.dropped):
        detail = f"it dropped {len(change.dropped)} of {len(raw_words)} words"
        return _refused(text, Reason.WORDS_DROPPED, detail + _which(change.dropped), change)
    if len(change.added) > allowed or _turns_meaning(change.added):
        detail = f"it added {len(change.added)} words to {len(raw_words)}"
        return _refused(text, Reason.WORDS_ADDED, detail + _which(change.added), change)
    return Verdict(True, text, Reason.ACCEPTED, "", change)


def _turns_meaning(words: tuple[str, ...]) -> bool:
    return any(word in NEGATIONS or any(char.isdigit() for char in word) for word in words)


def _which(words: tuple[str, ...]) -> str:
    critical = [word for word in words if _turns_meaning((word,))]
    return f", among them {', '.join(repr(word) for word in critical[:3])}" if critical else ""


def _refused(text: str, reason: Reason, detail: str, change: WordChange | None = None) -> Verdict:
    return Verdict(False, text, reason, detail, change)


def _longer(answer: str, raw: str) -> str:
    return f"the answer was {len(answer)} characters for {len(raw)}"


def _assistant_phrase(raw: list[str], answer: list[str]) -> str | None:
    raw_text, answer_text = " ".join(raw), " ".join(answer)
    for opening in ASSISTANT_OPENINGS:
        if _starts(answer_text, opening) and not _starts(raw_text, opening):
            return opening
    padded_raw, padded_answer = f" {raw_text} ", f" {answer_text} "
    for phrase in ASSISTANT_PHRASES:
        if f" {phrase} " in padded_answer and f" {phrase} " not in padded_raw:
            return phrase
    return None


def _starts(text: str, phrase: str) -> bool:
    return text == phrase or text.startswith(phrase + " ")


@functools.lru_cache(maxsize=8)
def _prompt_runs(prompt: str) -> frozenset[tuple[str, ...]]:
    return frozenset(_runs(content_words(prompt)))


def _has_prompt_run(prompt: frozenset[tuple[str, ...]], raw: list[str], answer: list[str]) -> bool:
    return not (prompt - _runs(raw)).isdisjoint(_runs(answer))


def _runs(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + PROMPT_RUN]) for i in range(len(words) - PROMPT_RUN + 1)}
