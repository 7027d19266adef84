"""What the user types into a history search, as SQL over the word index or a scan."""

from __future__ import annotations

from voxtray.history.schema import PENDING_TABLE, SEARCH_TABLE
from voxtray.history.words import match_expression, needles


def search_sql(
    columns: str,
    text: str,
    *,
    include_empty: bool,
    full_text: bool,
    holds_all: str,
    pending: bool = False,
) -> tuple[str, tuple[str, ...]]:
    """SELECT `columns` FROM the entries matching; ORDER BY and LIMIT are the caller's.

    With `full_text` the word index answers; with `pending` too, only for the entries it
    holds, and the entries changed since it was brought up to date are scanned. Without
    it (an SQLite lacking FTS5, an index dropped from a file opened read-only) every entry
    is scanned by the SQL function `holds_all`: one call whatever the number of words, so
    a query of any length fits.
    """
    conditions: list[str] = []
    params: tuple[str, ...] = ()
    expression, scanned = match_expression(text), needles(text)
    if expression is not None and scanned is not None and full_text:
        indexed = f"id IN (SELECT rowid FROM {SEARCH_TABLE} WHERE {SEARCH_TABLE} MATCH ?)"  # noqa: S608
        params = (expression,)
        if pending:
            noted = f"id IN (SELECT id FROM {PENDING_TABLE})"  # noqa: S608
            indexed = f"({indexed} AND NOT {noted} OR {noted} AND {holds_all}(text, ?))"
            params = (expression, scanned)
        conditions.append(indexed)
    elif scanned is not None:
        conditions.append(f"{holds_all}(text, ?)")
        params = (scanned,)
    if not include_empty:
        conditions.append("trim(text) != ''")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT {columns} FROM utterances{where}", params  # noqa: S608
