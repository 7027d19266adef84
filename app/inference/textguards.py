"""Text-level guards against Whisper's failure modes, for engines whose decoding loop we
cannot reach (sherpa-onnx) and as a last line for our own."""

from __future__ import annotations

import re

RUNAWAY_REPEATS = 4
"""An n-gram said this many times in a row is a decoding loop, not speech."""
KEPT_COPIES = 2
"""What a loop collapses to: people do say things twice ("no, no"), rarely four times."""
_MAX_NGRAM = 8


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
