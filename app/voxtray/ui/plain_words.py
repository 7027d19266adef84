"""Error messages in plain words: no errno numbers or exception names, and what to do."""

from __future__ import annotations

import re

from voxtray.models.store_errors import REFUSED_UNTRUSTED

_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")
_NETWORK = (
    ("Name or service not known", "the download server could not be found"),
    ("Temporary failure in name resolution", "the download server could not be found"),
    ("Network is unreachable", "this computer is not connected to a network"),
    ("Connection refused", "the server refused the connection"),
    ("timed out", "the server did not answer in time"),
    ("No space left on device", "the disk is full"),
    ("Permission denied", "Voxtray may not write to that folder"),
)
_HINT_NETWORK = "Check the internet connection, then press Install again."
_HINT_UNTRUSTED = "(trust it with Install anyway in Settings)"


def plain(message: str) -> str:
    """`message` with system error codes turned into words and a hint where one helps."""
    text = _ERRNO.sub("", message).strip()
    if text.endswith(REFUSED_UNTRUSTED):
        return f"{text} {_HINT_UNTRUSTED}"
    for raw, words in _NETWORK:
        if raw.lower() in text.lower():
            head = text.split(":", 1)[0] if ":" in text else ""
            said = f"{head}: {words}." if head else f"{words[0].upper()}{words[1:]}."
            hint = _HINT_NETWORK if "server" in words or "network" in words else ""
            return f"{said} {hint}".strip()
    return text
