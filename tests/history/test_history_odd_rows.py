"""Rows another program or a damaged disk wrote: values of the wrong type, text that is
not UTF-8, numbers past the float range. Each is listed with what could be read and
`damage` saying what could not; every other row stays as it was."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from voxtray.history.export import ExportFormat, entry_record, export
from voxtray.history.rows import COLUMNS
from voxtray.history.store import Entry, History

GOOD = "Send the report to Anneliese"
ODD = "the odd row"

# (what the attack writes, SQL setting it on the odd row, what `damage` names or None)
ODD_VALUES = {
    "a time that is not a date": ("created_at = 'yesterday'", "time is not a date"),
    "a time that is a number": ("created_at = 1700000000", "time is not a date"),
    "a duration as text": ("audio_s = 'long'", "duration"),
    "an infinite duration": ("audio_s = 9e999", "duration"),
    "a duration past any recording": ("audio_s = 1e308", "duration"),
    "a negative duration": ("audio_s = -4", "duration"),
    "text stored as a blob": ("text = CAST('the odd row' AS BLOB)", "text is stored as bytes"),
    "text that is not UTF-8": (
        "text = CAST(X'746865206f646420726f77ff' AS TEXT)",
        "text is not UTF-8",
    ),
    "a model name that is not UTF-8": ("model = CAST(X'77ff' AS TEXT)", "model name is not UTF-8"),
    "a timing too large for a float": (
        'timings_json = \'{"release_to_text": 1' + "0" * 400 + "}'",
        None,
    ),
    "an infinite timing": ("timings_json = '{\"release_to_text\": 1e999}'", None),
    "timings that are not JSON": ("timings_json = '{'", None),
    "a delivery target as bytes": ("delivery_target = X'ff'", "target window is stored as bytes"),
    "a re-run mark that is text": ("rerun_of = 'first'", None),
}


def _add(history: History, text: str) -> int:
    return history.add(
        text,
        model="whisper-tiny.en",
        engine="ort",
        provider="cpu",
        audio_s=2.5,
        timings={"release_to_text": 180.0},
    )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "history.sqlite3"


def _with_odd_row(path: Path, assignment: str) -> tuple[int, int]:
    with History(path) as history:
        good = _add(history, GOOD)
        odd = _add(history, ODD)
    raw = sqlite3.connect(path)
    raw.execute(f"UPDATE utterances SET {assignment} WHERE id = ?", (odd,))
    raw.commit()
    raw.close()
    return good, odd


def _readable_everywhere(entries: list[Entry]) -> None:
    """Each entry makes a strict JSON record, and the list exports in every format."""
    for entry in entries:
        json.dumps(entry_record(entry), allow_nan=False)
    for fmt in ExportFormat:
        assert isinstance(export(entries, fmt), str)


@pytest.mark.parametrize("attack", list(ODD_VALUES))
def test_an_odd_row_is_listed_as_damaged_and_the_others_stay_usable(
    path: Path, attack: str
) -> None:
    assignment, damage = ODD_VALUES[attack]
    good, odd = _with_odd_row(path, assignment)
    with History(path) as history:
        assert history.warnings == []  # nothing was moved aside
        listed = history.search(include_empty=True)
        assert [entry.id for entry in listed] == [odd, good]
        assert [entry.id for entry in history.recent()] == [odd, good]
        assert [entry.id for entry in history.search("report")] == [good]
        _readable_everywhere(listed)
        found = history.get(odd)
        assert found is not None
        kept = history.get(good)
        assert kept is not None
        assert (kept.text, kept.damage, kept.audio_s) == (GOOD, None, 2.5)
        assert kept.timings == {"release_to_text": 180.0}
        if damage is None:
            assert found.damage is None
        else:
            assert found.damage is not None
            assert damage in found.damage
        assert "odd row" in found.text or found.text == ODD
        history.update_text(odd, "mended")  # a damaged entry can still be corrected
        history.delete(good)
        assert [entry.text for entry in history.search("mended")] == ["mended"]


def test_an_odd_row_does_not_stop_a_read_only_reader(path: Path) -> None:
    good, odd = _with_odd_row(path, "text = CAST(X'ff' AS TEXT), created_at = 'x'")
    with History(path, read_only=True) as history:
        entries = history.search(include_empty=True)
    assert [entry.id for entry in entries] == [odd, good]
    assert entries[0].damage == "its time is not a date; text is not UTF-8"
    assert entries[0].created_at is None
    assert entries[0].text == "\ufffd"


# Any value SQLite can hold, in any column a reader turns into an Entry.
_ANY_VALUE = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.binary(max_size=40),
)
_COLUMNS = COLUMNS[1:]  # all but the id


@pytest.fixture(scope="module")
def loose_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A history whose table takes any value in any column (no NOT NULL, no CHECK), as
    a hand-made or foreign file can."""
    path = tmp_path_factory.mktemp("loose") / "history.sqlite3"
    with History(path) as history:
        _add(history, GOOD)
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA writable_schema = ON")
    raw.execute(
        "UPDATE sqlite_master SET sql = replace(replace(sql, 'NOT NULL', ''), "
        "'CHECK (delivered IN (0, 1))', '') WHERE name = 'utterances'"
    )
    raw.commit()
    raw.close()
    return path


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.fixed_dictionaries({column: _ANY_VALUE for column in _COLUMNS}), as_text=st.booleans()
)
def test_any_stored_values_list_and_export(
    loose_history: Path, values: dict[str, object], as_text: bool
) -> None:
    raw = sqlite3.connect(loose_history)
    columns = ", ".join(values)
    # Bytes go in as blobs, or (as_text) as TEXT that need not be UTF-8.
    marks = ", ".join(
        "CAST(? AS TEXT)" if as_text and isinstance(v, bytes) else "?" for v in values.values()
    )
    raw.execute(f"INSERT INTO utterances ({columns}) VALUES ({marks})", tuple(values.values()))
    raw.commit()
    raw.close()
    with History(loose_history) as history:
        entries = history.search(include_empty=True, limit=1000)
        assert GOOD in [entry.text for entry in entries]
        _readable_everywhere(entries)
        history.search("report anneliese 语音")
