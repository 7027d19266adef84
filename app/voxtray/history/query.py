"""What the user types into a history search, as SQL over the FTS5 index."""

from __future__ import annotations

import re

# Letters, digits and apostrophes inside words: the tokens unicode61 indexes.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def match_expression(text: str) -> str | None:
    """An FTS5 MATCH expression requiring every word of `text` as a prefix; None if blank.

    Each word is quoted, so FTS5 operators (AND, NEAR, ``*``, ``"``) typed by the user are
    searched for, never obeyed.
    """
    words = _WORD.findall(text)
    if not words:
        return None
    return " ".join('"' + word.replace('"', '""') + '"*' for word in words)


def search_sql(
    columns: str, text: str, *, include_empty: bool, full_text: bool = True
) -> tuple[str, tuple[str, ...]]:
    """SELECT `columns` FROM the entries matching; ORDER BY and LIMIT are the caller's.
    Without `full_text` (an SQLite lacking FTS5) each word is looked for anywhere in the text."""
    conditions: list[str] = []
    params: tuple[str, ...] = ()
    expression = match_expression(text)
    if expression is not None and full_text:
        conditions.append("id IN (SELECT rowid FROM utterances_fts WHERE utterances_fts MATCH ?)")
        params = (expression,)
    elif expression is not None:
        words = _WORD.findall(text)
        conditions.extend("text LIKE ? ESCAPE '\\'" for _ in words)
        params = tuple("%" + _escape_like(word) + "%" for word in words)
    if not include_empty:
        conditions.append("trim(text) != ''")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT {columns} FROM utterances{where}", params  # noqa: S608


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
