"""Text-level guards against Whisper's failure modes, for engines whose decoding loop we
cannot reach (sherpa-onnx) and as a last line for our own."""

from __future__ import annotations

import re

import numpy as np
from numpy.typing import NDArray

RUNAWAY_REPEATS = 4
"""An n-gram said this many times in a row is a decoding loop, not speech."""
KEPT_COPIES = 2
"""What a loop collapses to: people do say things twice ("no, no"), rarely four times."""
_MAX_NGRAM = 8
# Sound annotations Whisper learned from subtitles: "[BLANK_AUDIO]", "(water running)",
# "*sighs*", music notes. Never dictation.
_ANNOTATION = re.compile(r"\[[^\]]*\]|\([^)]*\)|\*[^*]+\*|[♪♫]+")
SILENCE_DBFS = -60.0
"""Audio quieter than this (RMS) is silence: nothing to recognise."""


def _key(word: str) -> str:
    return re.sub(r"\W", "", word.lower())


def collapse_repetition(text: str) -> tuple[str, bool]:
    """Collapse runs of a repeated word n-gram to `KEPT_COPIES` copies.

    Returns:
        The text and whether anything was removed.
    """
    words = text.split()
    keys = [_key(w) for w in words]
    out_words: list[str] = []
    out_keys: list[str] = []
    changed = False
    i = 0
    while i < len(words):
        n, count = _longest_run(keys, i)
        if count >= RUNAWAY_REPEATS:
            out_words += words[i : i + n * KEPT_COPIES]
            out_keys += keys[i : i + n * KEPT_COPIES]
            i += n * count
            changed = True
            continue
        out_words.append(words[i])
        out_keys.append(keys[i])
        i += 1
    joined = " ".join(out_words)
    return (joined.rstrip(" ,;") if changed else joined), changed


def _longest_run(keys: list[str], start: int) -> tuple[int, int]:
    """The n-gram starting at `start` that repeats most often back to back."""
    best = (1, 1)
    for n in range(1, _MAX_NGRAM + 1):
        gram = keys[start : start + n]
        if len(gram) < n or not any(gram):
            break
        count = 1
        while keys[start + count * n : start + (count + 1) * n] == gram:
            count += 1
        if count > best[1]:
            best = (n, count)
    return best


REPEAT_MIN_WORDS = 2
"""A span of this many words said twice in a row is worth checking against the audio; a
word said twice ("no, no") is ordinary speech."""


def repeated_words(text: str) -> int:
    """Words in the second and later copies of spans of `REPEAT_MIN_WORDS` or more words
    repeated back to back ("call me Abby. You can call me Abby" counts none; "call me
    Abby, call me Abby" counts 3)."""
    keys = [key for key in (_key(word) for word in text.split()) if key]
    count = 0
    start = 0
    while start < len(keys):
        span = _repeat_at(keys, start)
        count += span
        start += max(span, 1)
    return count


def _repeat_at(keys: list[str], start: int) -> int:
    """The longest n >= REPEAT_MIN_WORDS with keys[start:start+n] said again right after."""
    for n in range((len(keys) - start) // 2, REPEAT_MIN_WORDS - 1, -1):
        if keys[start : start + n] == keys[start + n : start + 2 * n]:
            return n
    return 0


def shared_edge(before: str, after: str) -> int:
    """How many words (at least `REPEAT_MIN_WORDS`) that end `before` begin `after`
    again, the most that do; 0 when none."""
    first = [key for key in (_key(word) for word in before.split()) if key]
    second = [key for key in (_key(word) for word in after.split()) if key]
    for n in range(min(len(first), len(second)), REPEAT_MIN_WORDS - 1, -1):
        if first[-n:] == second[:n]:
            return n
    return 0


def drop_leading_words(text: str, count: int) -> str:
    """`text` without its first `count` words (punctuation on its own goes with them)."""
    words = text.split()
    kept = 0
    for index, word in enumerate(words):
        if _key(word):
            kept += 1
        if kept == count:
            return " ".join(words[index + 1 :])
    return ""


def strip_annotations(text: str) -> tuple[str, bool]:
    """Remove sound annotations; returns the text and whether any were removed."""
    stripped = _ANNOTATION.sub(" ", text)
    changed = stripped != text
    return " ".join(stripped.split()), changed


def clean_transcript(text: str) -> tuple[str, list[str]]:
    """Both text guards; returns the text and the names of the guards that fired."""
    guards = []
    text, annotated = strip_annotations(text)
    if annotated:
        guards.append("annotation")
    text, repeated = collapse_repetition(text)
    if repeated:
        guards.append("repetition")
    return text, guards


def is_silent(audio: NDArray[np.float32]) -> bool:
    """True for audio whose RMS level is below SILENCE_DBFS (or empty)."""
    if audio.size == 0:
        return True
    rms = float(np.sqrt(np.mean(np.square(audio, dtype=np.float64))))
    return rms <= 10 ** (SILENCE_DBFS / 20)
