"""The user's vocabulary: words and names recognition should favour.

Whisper gets them as its initial prompt; a transducer run by sherpa-onnx as hotwords.
"""

from __future__ import annotations

import re
from pathlib import Path

from voxtray.errors import BadInputError, NotFoundError

MAX_WORDS = 200
MAX_ENTRY_CHARS = 100  # a name or a term; longer is pasted text, cut here
_SEPARATORS = re.compile(r"[,\n;]")


def parse_vocabulary(value: str) -> tuple[str, ...]:
    """Entries from a comma, semicolon or line separated list, spaces tidied, duplicates
    (any case) dropped."""
    return tuple(_entries(value).values())[:MAX_WORDS]


def vocabulary_size(value: str) -> int:
    """How many distinct entries ``value`` holds, counting those past `MAX_WORDS`."""
    return len(_entries(value))


def _entries(value: str) -> dict[str, str]:
    entries: dict[str, str] = {}
    for item in _SEPARATORS.split(value):
        entry = " ".join(item.split())[:MAX_ENTRY_CHARS].strip()
        if entry and not entry.startswith("#"):
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
