"""Text as the history search sees it.

Full-width and other compatibility forms are folded (NFKC), so "ＡＢＣ" is "ABC". Chinese,
Japanese and Korean run words together without spaces, so each of their characters is a
word of its own to the index, and a search for "语音" is the phrase of its two characters:
it is found inside "我喜欢语音识别技术". Case and accents are the index's to fold (FTS5's
unicode61 tokenizer); the scan used without an index folds them itself.
"""

from __future__ import annotations

import re
import unicodedata

# Letters, digits and apostrophes inside words: the tokens unicode61 indexes.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Scripts written without spaces between words: Han (with its extensions and
# compatibility ideographs), kana, and Hangul syllables and jamo.
_UNSPACED = re.compile(
    "(["
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\U00020000-\U0003134f"
    "])"
)
_ACCENTS = re.compile("[\u0300-\u036f]")
NEEDLE_SEPARATOR = "\x1f"
"""Between the words `needles` joins for `holds_all`."""


def index_words(text: str) -> str:
    """What the full-text index holds for `text`: NFKC, each CJK character set apart."""
    return _UNSPACED.sub(r" \1 ", unicodedata.normalize("NFKC", text))


def match_expression(text: str) -> str | None:
    """An FTS5 MATCH expression requiring each word of `text` (split at spaces) as a
    phrase whose last token is a prefix; None if there is no word.

    Each phrase is quoted, so FTS5 operators (AND, NEAR, ``*``, ``"``) typed by the user
    are searched for, never obeyed.
    """
    phrases = []
    for typed in text.split():
        tokens = _WORD.findall(index_words(typed))
        if tokens:
            phrases.append('"' + " ".join(tokens).replace('"', '""') + '"*')
    return " ".join(phrases) or None


def scan_folded(text: str) -> str:
    """`text` with compatibility forms, case and accents folded, for a scan: the accents
    unicode61 removes, the combining diacritical marks (so "é" is "e", "が" stays)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return unicodedata.normalize("NFC", _ACCENTS.sub("", decomposed))


def needles(text: str) -> str | None:
    """The words of `text`, folded and joined for `holds_all`; None if there is none."""
    words = _WORD.findall(scan_folded(text))
    return NEEDLE_SEPARATOR.join(words) if words else None


def holds_all(text: object, joined: object) -> bool:
    """Whether `text` holds each of the `needles` anywhere (the scan's SQL function)."""
    if not isinstance(text, str) or not isinstance(joined, str):
        return False
    folded = scan_folded(text)
    return all(word in folded for word in joined.split(NEEDLE_SEPARATOR))
