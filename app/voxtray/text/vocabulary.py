"""The user's vocabulary: words and names recognition should favour.

Whisper on the ort engine favours them inside its decoder (and, where chosen, as its
initial prompt); a transducer run by sherpa-onnx gets them as hotwords.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from voxtray.errors import BadInputError, NotFoundError
from voxtray.resources import resource_path

MAX_ENTRIES = 5000
ALLOWED = f"at most {MAX_ENTRIES} words and names"
"""What a vocabulary may be, in the words the file, the command line and the window use."""
MAX_ENTRY_CHARS = 100
"""Longer entries are no word or name (a pasted text, say) and are left out: encoding
one of tens of kilobytes would hold up the start."""
_SEPARATORS = re.compile(r"[,\n;]")


def parse_vocabulary(value: str) -> tuple[str, ...]:
    """Entries from a comma, semicolon or line separated list, spaces tidied, duplicates
    (any case) and entries over `MAX_ENTRY_CHARS` dropped.

    Raises:
        BadInputError: More than `MAX_ENTRIES` entries.
    """
    entries = _entries(value)
    if (why := size_problem(len(entries))) is not None:
        raise BadInputError(f"the vocabulary must be {ALLOWED} ({why})")
    return tuple(entries.values())


def size_problem(size: int) -> str | None:
    """Why a vocabulary of `size` distinct entries is refused, or None: the reason the
    vocabulary setting and `--vocabulary` both give after `ALLOWED`."""
    return f"it holds {size}" if size > MAX_ENTRIES else None


def vocabulary_size(value: str) -> int:
    """How many distinct entries ``value`` holds, counting those past `MAX_ENTRIES`."""
    return len(_entries(value))


@dataclass(frozen=True)
class VocabularyReview:
    """What a vocabulary text holds, for the Words page to say.

    Attributes:
        entries: The distinct entries, as `parse_vocabulary` keeps them.
        duplicates: Entries dropped as another's copy (case, width, invisible characters).
        without_letters: Entries dropped for holding no letter ("...", "123").
        common: Kept entries made only of common words, which biasing leaves alone.
    """

    entries: tuple[str, ...]
    duplicates: int
    without_letters: int
    common: tuple[str, ...]


def review_vocabulary(value: str) -> VocabularyReview:
    """`value` as the vocabulary will use it, and what was left out of it and why."""
    tally = _Tally()
    entries = tuple(_entries(value, tally).values())
    _, common = split_common(entries)
    return VocabularyReview(entries, tally.duplicates, tally.without_letters, common)


@dataclass
class _Tally:
    duplicates: int = 0
    without_letters: int = 0


def _tidy(item: str) -> str:
    """One entry: compatibility forms folded (full-width letters), invisible format
    characters (bidi controls, zero-width spaces) out, spaces tidied."""
    folded = unicodedata.normalize("NFKC", item)
    visible = "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
    return " ".join(visible.split())


def _entries(value: str, tally: _Tally | None = None) -> dict[str, str]:
    tally = tally or _Tally()
    entries: dict[str, str] = {}
    for line in value.splitlines():
        if line.lstrip().startswith("#"):
            continue  # a comment line, commas and all
        for item in _SEPARATORS.split(line):
            if len(item) > 4 * MAX_ENTRY_CHARS:
                continue  # spaces are tidied only within reason
            entry = _tidy(item)
            if not entry or entry.startswith("#") or len(entry) > MAX_ENTRY_CHARS:
                continue
            if not any(ch.isalpha() for ch in entry):
                tally.without_letters += 1  # "..." biased Whisper into writing "... ..."
            elif entry.casefold() in entries:
                tally.duplicates += 1
            else:
                entries[entry.casefold()] = entry
    return entries


@functools.cache
def common_words() -> frozenset[str]:
    """Common English words (`resources/common-words.txt`)."""
    text = resource_path("common-words.txt").read_text(encoding="utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def is_common(entry: str) -> bool:
    """Every word of `entry` is a common word: favouring it would bend ordinary speech."""
    words = re.findall(r"[^\W\d_]+", entry.casefold())
    return bool(words) and all(word in common_words() for word in words)


def split_common(entries: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The entries worth favouring, and those made only of common words."""
    kept: list[str] = []
    common: list[str] = []
    for entry in entries:
        (common if is_common(entry) else kept).append(entry)
    return tuple(kept), tuple(common)


def load_vocabulary(value: str) -> tuple[str, ...]:
    """The vocabulary a flag names: a file (one entry a line, or commas) or a comma list.

    Raises:
        NotFoundError: `value` looks like a file name (ends in .txt) that does not exist.
        BadInputError: The file cannot be read as UTF-8 text.
    """
    path = Path(value).expanduser()
    if path.is_file():
        try:
            return parse_vocabulary(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInputError(f"cannot read vocabulary file {path}: {exc}") from None
    if path.suffix.lower() == ".txt":
        raise NotFoundError(f"vocabulary file {path} not found")
    return parse_vocabulary(value)


def whisper_prompt(vocabulary: tuple[str, ...]) -> str:
    """The initial prompt for Whisper: the entries as a comma list, which Whisper copies
    the spelling from without copying a style."""
    return ", ".join(vocabulary) + "." if vocabulary else ""


def hotwords_lines(vocabulary: tuple[str, ...]) -> str:
    """A sherpa-onnx hotwords file: one phrase a line (it splits them into tokens)."""
    return "".join(f"{entry}\n" for entry in vocabulary)
