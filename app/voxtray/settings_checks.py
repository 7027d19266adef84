"""What the open-ended settings accept: the microphone, the server address, the language,
the hotkey, the replacement lines, the vocabulary's size and clean-up's endpoint, hosts and
instructions.

`settings_schema` attaches each check to its setting, so a hand-edited settings.json, the
command line and the settings window refuse the same values with the same words. A
`*_problem` check says why a value is refused (None: accepted); an `*_ok` check only
answers yes or no, and its setting says in words what it takes.
"""

from __future__ import annotations

import functools
import json
import re
from urllib.parse import urlsplit

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


CLEANUP_SCHEMES = ("http", "https")
CLEANUP_DEFAULT_ENDPOINT = "http://localhost:11434/v1"
"""Ollama's OpenAI-compatible API on this computer."""
MAX_CLEANUP_HOSTS = 100
MAX_CLEANUP_PROMPT_CHARS = 4000
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
_IPV6 = re.compile(r"^[0-9a-f:.]+$")


def host_name(host: str) -> str:
    """A host as consent names it: lower case, no trailing dot, IPv6 without brackets."""
    return host.strip().strip("[]").rstrip(".").lower()


def is_host(name: str) -> bool:
    """Whether ``name`` (see `host_name`) names one machine: no scheme, port or wildcard."""
    if not name or len(name) > 253:
        return False
    return bool(_HOST.match(name)) or (":" in name and bool(_IPV6.match(name)))


def cleanup_endpoint_problem(url: object) -> str | None:
    """Why ``url`` cannot be clean-up's endpoint, as far as its text tells; None if it can
    (`voxtray.cleanup.endpoint` takes it apart further)."""
    if not isinstance(url, str) or not url.strip():
        return "an http(s):// URL is needed"
    if url != url.strip() or any(ord(char) < 33 for char in url):
        return "the URL has spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is no number raises here
    except ValueError:
        return "the port must be a number from 1 to 65535"
    if parts.scheme not in CLEANUP_SCHEMES:
        return "the address must start with http or https://"
    if not parts.hostname:
        return "the URL has no host"
    if parts.username is not None or parts.password is not None:
        return "put the key in the API key field, not in the URL"
    if parts.query or parts.fragment:
        return "the URL must not have a ?query or #fragment"
    return None


def consented_hosts_problem(value: object) -> str | None:
    """Why ``value`` cannot be the consented-hosts setting; None if it can."""
    if not isinstance(value, str):
        return "must be text, one host per line"
    entries = [entry.strip() for entry in re.split(r"[\n,]", value) if entry.strip()]
    if len(entries) > MAX_CLEANUP_HOSTS:
        return f"at most {MAX_CLEANUP_HOSTS} hosts"
    for entry in entries:
        if not is_host(host_name(entry)):
            shown_entry = entry if len(entry) <= 40 else entry[:40] + "..."
            return f"{shown_entry!r} is not a host name (no scheme, port, path or wildcard)"
    return None


def cleanup_prompt_problem(value: object) -> str | None:
    """Why ``value`` cannot be the `cleanup_prompt` setting; None if it can."""
    if not isinstance(value, str):
        return "must be text: a preset's name or your own instructions"
    if len(value) > MAX_CLEANUP_PROMPT_CHARS:
        return f"at most {MAX_CLEANUP_PROMPT_CHARS} characters"
    return None


MAX_MODES_CHARS = 20_000


def modes_problem(value: object) -> str | None:
    """Why ``value`` cannot be the `modes` setting; None if it can. A line that cannot be
    read is no reason: it is left out at start with a line saying why (`voxtray.modes`)."""
    if not isinstance(value, str):
        return "must be text, one mode a line"
    if len(value) > MAX_MODES_CHARS:
        return f"at most {MAX_MODES_CHARS} characters"
    return None


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
