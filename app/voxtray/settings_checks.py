"""What the open-ended settings accept: the microphone, the server address, the language,
the hotkey, the replacement lines and the vocabulary's size.

`settings_schema` attaches each check to its setting, so a hand-edited settings.json, the
command line and the settings window refuse the same values with the same words. A
`*_problem` check says why a value is refused (None: accepted); an `*_ok` check only
answers yes or no, and its setting says in words what it takes.
"""

from __future__ import annotations

import functools
import json

from voxtray.hotkeys.keys import parse_hotkey
from voxtray.text.languages import is_language_setting
from voxtray.text.postprocess import bad_replacement_lines
from voxtray.text.vocabulary import size_problem, vocabulary_size

REMOTE_SCHEMES = ("http://", "https://", "tcp://")
_DETAIL_CHARS = 80
_SHOWN_LINES = 5


def shown(value: object) -> str:
    """A value from a hand-edited file as a short piece of one line."""
    if value is None or isinstance(value, str | int | float):
        try:
            text = json.dumps(value)
        except ValueError:  # an integer past Python's int-to-str digit limit
            return "a huge integer"
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def microphone_ok(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and bool(value.strip())


def remote_url_ok(value: object) -> bool:
    if not isinstance(value, str):
        return False
    if not value:
        return True
    host = value.partition("://")[2].split("/", 1)[0]
    return value.startswith(REMOTE_SCHEMES) and bool(host) and value.strip() == value


def language_ok(value: object) -> bool:
    return isinstance(value, str) and is_language_setting(value)


# The checks below run on every `Settings` built (each edit in the settings window builds
# one), and a vocabulary may be 5,000 lines: the last few answers are kept.


@functools.lru_cache(maxsize=8)
def hotkey_problem(value: str) -> str | None:
    try:
        parse_hotkey(value)
    except ValueError as exc:
        return _short(str(exc))
    return None


@functools.lru_cache(maxsize=8)
def replacements_problem(value: str) -> str | None:
    bad = bad_replacement_lines(value)
    if not bad:
        return None
    numbers = ", ".join(map(str, bad[:_SHOWN_LINES])) + (", ..." if len(bad) > _SHOWN_LINES else "")
    return f"line {numbers} is not" if len(bad) == 1 else f"lines {numbers} are not"


@functools.lru_cache(maxsize=8)
def vocabulary_problem(value: str) -> str | None:
    return size_problem(vocabulary_size(value))


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _DETAIL_CHARS else line[: _DETAIL_CHARS - 3] + "..."
