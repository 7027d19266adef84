"""The history database: saving before delivery, ordering, threads, and damaged files."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.database import database_locked
from tests.support.disks import fill, tmpfs
from voxtray.errors import CorruptError, DiskError, NotFoundError, VoxtrayError
from voxtray.history import database, schema
from voxtray.history.store import SCHEMA_VERSION, Entry, History


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "history.sqlite3"


@pytest.fixture
def history(db_path: Path) -> Iterator[History]:
    with History(db_path) as opened:
        yield opened


def _add(history: History, text: str, **overrides: object) -> int:
    fields: dict[str, object] = {
        "model": "whisper-tiny.en",
        "engine": "ort",
        "provider": "cpu",
        "audio_s": 2.5,
        "timings": {"vad": 0.01, "encode": 0.2},
    }
    fields.update(overrides)
    return history.add(text, **fields)  # type: ignore[arg-type]


def test_default_path_is_in_the_data_folder(voxtray_home: Path) -> None:
    with History() as opened:
        assert opened.path == voxtray_home / "history.sqlite3"
        assert opened.path.is_file()


def test_add_and_get(history: History) -> None:
    before = datetime.now(UTC)
    entry_id = history.add(
        "Hello world.",
        model="whisper-base",
        engine="sherpa",
        provider="cuda",
        audio_s=3.25,
        timings={"vad": 0.004, "decode": 0.125, "total": 0.5},
    )
    entry = history.get(entry_id)
    assert entry is not None
    assert entry == Entry(
        id=entry_id,
        created_at=entry.created_at,
        text="Hello world.",
        model="whisper-base",
        engine="sherpa",
        provider="cuda",
        audio_s=3.25,
        timings={"vad": 0.004, "decode": 0.125, "total": 0.5},
        delivered=False,
        delivery_error=None,
    )
    assert entry.created_at.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= entry.created_at <= datetime.now(UTC)
    assert history.get(entry_id + 1000) is None


def test_created_at_is_stored_as_iso_utc(history: History, db_path: Path) -> None:
    _add(history, "x")
    with sqlite3.connect(db_path) as raw:
        (stamp,) = raw.execute("SELECT created_at FROM utterances").fetchone()
    assert stamp.endswith("Z")
    assert datetime.fromisoformat(stamp).utcoffset() == timedelta(0)


def test_mark_delivered_and_failed(history: History) -> None:
    first = _add(history, "one")
    second = _add(history, "two")
    history.mark_delivered(first)
    history.mark_failed(second, "xdotool: no window has focus")
    one, two = history.get(first), history.get(second)
    assert one is not None
    assert (one.delivered, one.delivery_error) == (True, None)
    assert two is not None
    assert (two.delivered, two.delivery_error) == (False, "xdotool: no window has focus")
    history.mark_delivered(second)  # a retry that worked clears the error
    two = history.get(second)
    assert two is not None
    assert (two.delivered, two.delivery_error) == (True, None)


def test_mark_partial_records_what_went_where(history: History) -> None:
    entry_id = _add(history, "hello there world")
    history.mark_partial(entry_id, "hello ", 'window "notes" (0x400007)', "the window was closed")
    entry = history.get(entry_id)
    assert entry is not None
    assert entry.partial
    assert not entry.delivered
    assert entry.delivered_text == "hello "
    assert entry.delivery_target == 'window "notes" (0x400007)'
    assert entry.delivery_error == "the window was closed"
    history.mark_delivered(entry_id)  # a retry that worked: delivered, no error
    entry = history.get(entry_id)
    assert entry is not None
    assert (entry.delivered, entry.delivery_error) == (True, None)
    with pytest.raises(NotFoundError, match="42"):
        history.mark_partial(42, "", "", "")


def test_version_1_database_gains_partial_delivery_columns(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as raw:
        schema.MIGRATIONS[0](raw)
        raw.execute(
            "INSERT INTO utterances (created_at, text, model, engine, provider, audio_s, "
            "timings_json, delivered) VALUES ('2026-01-01T00:00:00Z', 'old', 'm', 'ort', "
            "'cpu', 1.0, '{}', 1)"
        )
        raw.execute("PRAGMA user_version = 1")
    raw.close()
    with History(db_path) as upgraded:
        (old,) = upgraded.recent()
        assert (old.text, old.delivered, old.partial) == ("old", True, False)
        upgraded.mark_partial(old.id, "ol", "window 0x1", "the focus moved")
        entry = upgraded.get(old.id)
        assert entry is not None
        assert entry.delivered_text == "ol"


def test_mark_unknown_id_raises(history: History) -> None:
    with pytest.raises(NotFoundError, match="42"):
        history.mark_delivered(42)
    with pytest.raises(NotFoundError, match="42"):
        history.mark_failed(42, "boom")


def test_recent_is_newest_first_and_limited(history: History) -> None:
    ids = [_add(history, f"utterance {n}") for n in range(15)]
    assert [e.id for e in history.recent()] == ids[::-1][:10]
    assert [e.text for e in history.recent(3)] == ["utterance 14", "utterance 13", "utterance 12"]
    assert len(history.recent(100)) == 15
    assert history.recent(0) == []
    assert history.count() == 15


def test_empty_history(history: History) -> None:
    assert history.recent() == []
    assert history.count() == 0
    assert history.warning is None


def test_timings_round_trip(history: History) -> None:
    timings = {"vad": 1e-6, "encoder": 0.123456789, "decoder": 12.0, "ünïcode stage": 3.0}
    entry = history.get(_add(history, "t", timings=timings))
    assert entry is not None
    assert dict(entry.timings) == timings
    empty = history.get(_add(history, "t", timings={}))
    assert empty is not None
    assert dict(empty.timings) == {}


def test_non_finite_timings_do_not_break_add(history: History) -> None:
    entry = history.get(_add(history, "t", timings={"ok": 1.0, "bad": float("nan")}))
    assert entry is not None
    assert dict(entry.timings) == {"ok": 1.0}


def test_text_is_kept_exactly(history: History) -> None:
    text = "Line one\nline two\t'quotes' \"double\" 🎤 ; DROP TABLE utterances; --"
    entry = history.get(_add(history, text))
    assert entry is not None
    assert entry.text == text


def test_entries_survive_reopening(db_path: Path) -> None:
    with History(db_path) as first:
        kept = _add(first, "before restart")
        first.mark_failed(kept, "typing failed")
    with History(db_path) as second:
        assert second.count() == 1
        entry = second.get(kept)
        assert entry is not None
        assert (entry.text, entry.delivery_error) == ("before restart", "typing failed")
        newer = _add(second, "after restart")
        assert newer > kept


def test_add_is_committed_before_it_returns(history: History, db_path: Path) -> None:
    entry_id = _add(history, "delivery is about to fail")
    # Another connection (another process, after a crash) already sees it.
    with sqlite3.connect(db_path) as other:
        row = other.execute("SELECT text FROM utterances WHERE id = ?", (entry_id,)).fetchone()
    assert row == ("delivery is about to fail",)


def test_wal_mode_and_schema_version(history: History, db_path: Path) -> None:
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        columns = [row[1] for row in raw.execute("PRAGMA table_info(utterances)")]
    assert columns == [
        "id",
        "created_at",
        "text",
        "model",
        "engine",
        "provider",
        "audio_s",
        "timings_json",
        "delivered",
        "delivery_error",
        "delivered_text",
        "delivery_target",
        "rerun_of",
        "recovered",
        "verified",
        "raw_text",
        "cleaned_text",
        "cleanup",
        "mode",
    ]


def test_migration_hook_runs_new_steps_once(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with History(db_path) as first:
        _add(first, "old row")
    calls: list[int] = []

    def add_language(db: sqlite3.Connection) -> None:
        calls.append(1)
        db.execute("ALTER TABLE utterances ADD COLUMN language TEXT")

    migrations = (*schema.MIGRATIONS, add_language)
    monkeypatch.setattr(database, "MIGRATIONS", migrations)
    with History(db_path) as second:
        assert second.count() == 1
    with History(db_path):
        pass
    assert calls == [1]
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (len(migrations),)
        columns = [row[1] for row in raw.execute("PRAGMA table_info(utterances)")]
    assert "language" in columns


def test_failed_migration_changes_nothing(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with History(db_path) as first:
        _add(first, "old row")

    def broken(db: sqlite3.Connection) -> None:
        db.execute("ALTER TABLE utterances ADD COLUMN half_done TEXT")
        raise RuntimeError("migration bug")

    migrations = (*schema.MIGRATIONS, broken)
    monkeypatch.setattr(database, "MIGRATIONS", migrations)
    with pytest.raises(RuntimeError, match="migration bug"):
        History(db_path)
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (len(migrations) - 1,)
        columns = [row[1] for row in raw.execute("PRAGMA table_info(utterances)")]
    assert "half_done" not in columns


def test_concurrent_writers_all_land(history: History) -> None:
    threads, per_thread = 4, 100
    ids: list[list[int]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    start = threading.Barrier(threads + 1)

    def writer(n: int) -> None:
        start.wait()
        try:
            for i in range(per_thread):
                entry_id = _add(history, f"thread {n} item {i}")
                if i % 2:
                    history.mark_delivered(entry_id)
                else:
                    history.mark_failed(entry_id, "no focus")
                ids[n].append(entry_id)
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        # The GUI thread reads while the worker writes.
        start.wait()
        for _ in range(50):
            history.recent(5)
            history.count()

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    gui = threading.Thread(target=reader)
    for thread in [*workers, gui]:
        thread.start()
    for thread in [*workers, gui]:
        thread.join(timeout=60)
    assert errors == []
    all_ids = [entry_id for chunk in ids for entry_id in chunk]
    assert len(all_ids) == len(set(all_ids)) == threads * per_thread
    assert history.count() == threads * per_thread
    texts = {entry.text for entry in history.recent(threads * per_thread)}
    assert texts == {f"thread {n} item {i}" for n in range(threads) for i in range(per_thread)}
    delivered = [e.delivered for e in history.recent(threads * per_thread)]
    assert delivered.count(True) == threads * per_thread // 2


def test_two_connections_on_one_file(db_path: Path) -> None:
    # The tray and a command-line listing may have the file open at once.
    with History(db_path) as tray, History(db_path) as cli:
        entry_id = _add(tray, "from the tray")
        assert cli.get(entry_id) is not None
        cli.mark_delivered(entry_id)
        entry = tray.get(entry_id)
        assert entry is not None
        assert entry.delivered


def test_garbage_file_is_moved_aside_and_replaced(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    garbage = b"this is not a database " * 200
    db_path.write_bytes(garbage)
    with History(db_path) as recovered:
        assert recovered.count() == 0
        assert recovered.warning is not None
        assert "\n" not in recovered.warning
        _add(recovered, "works again")
        assert recovered.count() == 1
    moved = list(db_path.parent.glob("history.sqlite3.corrupt-*"))
    assert len(moved) == 1
    assert moved[0].read_bytes() == garbage
    assert str(moved[0]) in recovered.warning
    with History(db_path) as reopened:
        assert reopened.warning is None
        assert reopened.count() == 1


def _damage_pages(path: Path) -> None:
    """Overwrite the middle of a database file, past its header page."""
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    for offset in range(page, len(data) - page, page):
        data[offset : offset + 512] = b"\xa5" * 512
    path.write_bytes(bytes(data))


def test_damaged_pages_are_detected(db_path: Path) -> None:
    with History(db_path) as first:
        for n in range(400):
            _add(first, f"utterance {n} " + "words " * 20)
    # Closing the last connection checkpoints the WAL into the main file.
    assert not db_path.with_name("history.sqlite3-wal").exists()
    _damage_pages(db_path)
    with History(db_path) as recovered:
        assert recovered.warning is not None
        assert "damaged" in recovered.warning
        assert recovered.count() == 0
    assert len(list(db_path.parent.glob("history.sqlite3.corrupt-*"))) == 1


def test_no_stale_wal_is_left_beside_the_fresh_database(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"garbage" * 100)
    db_path.with_name("history.sqlite3-wal").write_bytes(b"old wal")
    with History(db_path) as recovered:
        assert recovered.warning is not None
        entry_id = _add(recovered, "fresh")
    with History(db_path) as reopened:
        assert reopened.warning is None
        assert reopened.get(entry_id) is not None
    # SQLite drops a WAL it cannot use when the damaged file is closed; anything it keeps
    # is moved with the file, under the name SQLite looks for beside it.
    for moved in db_path.parent.glob("history.sqlite3.corrupt-*-wal"):
        assert moved.read_bytes() == b"old wal"


def test_repeated_corruption_never_overwrites_a_kept_file(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    for round_ in range(3):
        db_path.write_bytes(b"garbage %d " % round_ * 100)
        with History(db_path) as recovered:
            assert recovered.warning is not None
    moved = db_path.parent.glob("history.sqlite3.corrupt-*")
    kept = sorted(p.read_bytes()[:9] for p in moved if not p.name.endswith(("-wal", "-shm")))
    assert kept == [b"garbage 0", b"garbage 1", b"garbage 2"]


def test_database_from_a_newer_version_is_set_aside(db_path: Path) -> None:
    with History(db_path) as first:
        _add(first, "written by the future")
    with sqlite3.connect(db_path) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    with History(db_path) as opened:
        assert opened.warning is not None
        assert "newer" in opened.warning
        assert opened.count() == 0


def test_unwritable_folder_is_a_disk_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file")
    with pytest.raises(DiskError, match="cannot write"):
        History(blocker / "history.sqlite3")


def test_unopenable_database_is_a_disk_error(tmp_path: Path) -> None:
    folder_in_the_way = tmp_path / "history.sqlite3"
    folder_in_the_way.mkdir()
    with pytest.raises(DiskError, match="cannot write the history database"):
        History(folder_in_the_way)


def test_read_only_database_is_a_disk_error_on_add(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = History(db_path)
    _add(history, "fine")
    history.close()
    # Root ignores file modes, so the read-only case is made with SQLite's own switch.
    readonly = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
    monkeypatch.setattr(history, "_db", readonly)
    monkeypatch.setattr(history, "_closed", False)
    with pytest.raises(DiskError, match="cannot write the history database"):
        _add(history, "lost?")
    assert history.count() == 1
    history.close()


def test_closed_history_refuses_calls(db_path: Path) -> None:
    history = History(db_path)
    history.close()
    history.close()  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        history.count()
    with pytest.raises(RuntimeError, match="closed"):
        _add(history, "late")


# --- permissions, foreign schemas, and storing that cannot succeed ---------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_database_and_its_side_files_are_private(db_path: Path) -> None:
    """Transcripts are as private as the settings: 0600, whatever the umask."""
    previous = os.umask(0o022)
    try:
        with History(db_path) as history:
            _add(history, "a private sentence")
            sides = [db_path.with_name(db_path.name + s) for s in ("-wal", "-shm")]
            assert all(side.exists() for side in sides)
            assert [_mode(p) for p in (db_path, *sides)] == [0o600] * 3
    finally:
        os.umask(previous)


def test_an_older_world_readable_database_is_closed_up(db_path: Path) -> None:
    with History(db_path) as history:
        _add(history, "kept")
    db_path.chmod(0o644)
    wal = db_path.with_name(db_path.name + "-wal")
    wal.write_bytes(b"")
    wal.chmod(0o644)
    with History(db_path) as history:
        assert history.count() == 1
        assert _mode(db_path) == 0o600
        assert _mode(wal) == 0o600


def _foreign_columns(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE utterances (id INTEGER PRIMARY KEY, words TEXT)")
    db.execute("PRAGMA user_version = 1")


def _foreign_unversioned(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE utterances (spoken TEXT)")


@pytest.mark.parametrize("make", [_foreign_columns, _foreign_unversioned])
def test_unexpected_schema_is_set_aside_with_a_warning(db_path: Path, make: object) -> None:
    """Tables of another shape (another program, a hand edit) used to end the app: now
    the file is kept aside and a fresh history starts, with one line for the user."""
    db_path.parent.mkdir(parents=True)
    db = sqlite3.connect(db_path)
    make(db)  # type: ignore[operator]
    db.commit()
    db.close()
    with History(db_path) as history:
        assert len(history.warnings) == 1
        line = history.warnings[0]
        assert "\n" not in line
        assert "not a Voxtray history" in line
        moved = list(db_path.parent.glob("history.sqlite3.corrupt-*"))
        assert [str(m) in line for m in moved] == [True]
        _add(history, "fresh")
        assert [e.text for e in history.recent()] == ["fresh"]


def test_a_table_changed_under_a_running_history_is_a_voxtray_error(db_path: Path) -> None:
    with History(db_path) as history:
        other = sqlite3.connect(db_path)
        other.execute("ALTER TABLE utterances RENAME TO elsewhere")
        other.close()
        with pytest.raises(VoxtrayError, match="history database"):
            history.recent()
        with pytest.raises(VoxtrayError, match="history database"):
            _add(history, "lost")


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 512 KiB tmpfs, unmounted afterwards."""
    with tmpfs(tmp_path / "tmpfs", "512k") as mount_point:
        yield mount_point


def test_full_disk_is_a_quick_disk_error_and_recovers(small_tmpfs: Path) -> None:
    with History(small_tmpfs / "history.sqlite3") as history:
        _add(history, "before")
        filler = fill(small_tmpfs)
        started = time.monotonic()
        with pytest.raises(DiskError, match="cannot write the history database"):
            _add(history, "x" * 300_000)
        assert time.monotonic() - started < 1.0
        assert [e.text for e in history.recent()] == ["before"]
        filler.unlink()
        _add(history, "after")
        assert history.count() == 2


def test_read_only_mount_is_a_disk_error(small_tmpfs: Path) -> None:
    path = small_tmpfs / "history.sqlite3"
    with History(path) as history:
        _add(history, "kept")
    # Linux refuses to remount while a file is open for writing, hence closed first.
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    started = time.monotonic()
    with pytest.raises(DiskError, match="cannot write the history database"):
        History(path)
    assert time.monotonic() - started < 1.0
    with pytest.raises(DiskError, match="cannot write"):
        History(small_tmpfs / "new" / "history.sqlite3")


LOCKER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(60)
"""


def test_database_locked_by_another_program_is_a_quick_disk_error(db_path: Path) -> None:
    with History(db_path) as history:
        _add(history, "before")
        locker = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(db_path)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert locker.stdout is not None
            assert locker.stdout.readline().strip() == "locked"
            started = time.monotonic()
            with pytest.raises(DiskError, match="locked"):
                _add(history, "waits for the lock")
            elapsed = time.monotonic() - started
            assert elapsed < 3.5, f"blocked {elapsed:.1f} s"
        finally:
            locker.kill()
            locker.wait()
        _add(history, "after")
        assert history.count() == 2


def test_recovered_mark_is_kept(history: History) -> None:
    plain = _add(history, "typed as usual")
    recovered = history.add(
        "from an interrupted dictation",
        model="m",
        engine="ort",
        provider="cpu",
        audio_s=1.0,
        timings={},
        recovered=True,
    )
    entries = {entry.id: entry for entry in history.recent()}
    assert entries[recovered].recovered
    assert not entries[plain].recovered


def test_a_version_1_database_gains_the_recovered_column(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as raw:
        schema.MIGRATIONS[0](raw)
        raw.execute("PRAGMA user_version = 1")
        raw.execute(
            "INSERT INTO utterances (created_at, text, model, engine, provider, audio_s, "
            "timings_json) VALUES ('2026-01-01T00:00:00Z', 'old', 'm', 'e', 'p', 1, '{}')"
        )
    with History(db_path) as history:
        [entry] = history.recent()
        assert (entry.text, entry.recovered) == ("old", False)


# --- a history restored from a dump, and reading without writing -----------------------


def _dump_and_restore(source: Path, target: Path) -> None:
    """What a user does with the sqlite3 shell: `.dump`, then the dump read into a new
    file (Python's own dump where the shell is missing: it loses the version the same way)."""
    shell = shutil.which("sqlite3")
    if shell is not None:
        dump = subprocess.run([shell, str(source), ".dump"], capture_output=True, check=True)
        subprocess.run([shell, str(target)], input=dump.stdout, check=True)
        return
    with sqlite3.connect(source) as old, sqlite3.connect(target) as new:
        new.executescript("\n".join(old.iterdump()))


def test_a_history_restored_from_a_dump_is_recognised(tmp_path: Path) -> None:
    original = tmp_path / "history.sqlite3"
    with History(original) as history:
        kept = _add(history, "我喜欢语音识别技术")
        history.mark_delivered(kept, "window 0x1")
        _add(history, "Send the report")
    restored = tmp_path / "restored" / "history.sqlite3"
    restored.parent.mkdir()
    _dump_and_restore(original, restored)
    with sqlite3.connect(restored) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (0,)  # what a dump loses
    with History(restored) as history:
        assert history.warnings == []
        assert [e.text for e in history.recent()] == ["Send the report", "我喜欢语音识别技术"]
        entry = history.get(kept)
        assert entry is not None
        assert (entry.delivered, entry.delivery_target) == (True, "window 0x1")
        assert [e.id for e in history.search("语音")] == [kept]
        added = _add(history, "after the restore")
        assert [e.id for e in history.search("restore")] == [added]
    assert list(restored.parent.glob("*.corrupt-*")) == []
    with sqlite3.connect(restored) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    read_only = tmp_path / "read-only" / "history.sqlite3"
    read_only.parent.mkdir()
    _dump_and_restore(original, read_only)
    with History(read_only, read_only=True) as reader:
        assert [e.text for e in reader.search("语音")] == ["我喜欢语音识别技术"]


def test_a_reader_lists_while_another_program_holds_the_write_lock(db_path: Path) -> None:
    with History(db_path) as history:
        _add(history, "before the lock")
    with database_locked(db_path):
        started = time.monotonic()
        with History(db_path, read_only=True) as reader:
            assert [e.text for e in reader.search("lock")] == ["before the lock"]
        assert time.monotonic() - started < 1.5


def test_a_reader_writes_nothing(db_path: Path) -> None:
    with pytest.raises(NotFoundError):
        History(db_path, read_only=True)
    assert not db_path.exists()
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.write_bytes(b"not a database " * 100)
    with pytest.raises(CorruptError, match="sets it aside at its next start"):
        History(db_path, read_only=True)
    assert db_path.read_bytes() == b"not a database " * 100
    assert list(db_path.parent.glob("*.corrupt-*")) == []
    db_path.unlink()
    with sqlite3.connect(db_path) as raw:  # schema 5: read as it is, not migrated
        for migration in schema.MIGRATIONS[:5]:
            migration(raw)
        raw.execute(
            "INSERT INTO utterances (created_at, text, model, engine, provider, audio_s, "
            "timings_json) VALUES ('2026-01-01T00:00:00Z', 'old words', 'm', 'e', 'p', 1, '{}')"
        )
        raw.execute("PRAGMA user_version = 5")
    with History(db_path, read_only=True) as reader:
        assert [e.text for e in reader.search("word")] == ["old words"]
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (5,)
