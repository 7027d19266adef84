"""The user's vocabulary: words and names recognition should favour.

Whisper on the ort engine favours them inside its decoder (and, where chosen, as its
initial prompt); a transducer run by sherpa-onnx gets them as hotwords.
"""

from __future__ import annotations

import re
from pathlib import Path

from voxtray.errors import BadInputError, NotFoundError

MAX_ENTRIES = 5000
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
    if len(entries) > MAX_ENTRIES:
        raise BadInputError(
            f"the vocabulary holds {len(entries)} entries; at most {MAX_ENTRIES} are allowed"
        )
    return tuple(entries.values())


def vocabulary_size(value: str) -> int:
    """How many distinct entries ``value`` holds, counting those past `MAX_ENTRIES`."""
    return len(_entries(value))


def _entries(value: str) -> dict[str, str]:
    entries: dict[str, str] = {}
    for line in value.splitlines():
        if line.lstrip().startswith("#"):
            continue  # a comment line, commas and all
        for item in _SEPARATORS.split(line):
            if len(item) > 4 * MAX_ENTRY_CHARS:
                continue  # spaces are tidied only within reason
            entry = " ".join(item.split())
            if entry and not entry.startswith("#") and len(entry) <= MAX_ENTRY_CHARS:
                entries.setdefault(entry.casefold(), entry)
    return entries


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
