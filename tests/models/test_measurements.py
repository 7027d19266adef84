"""measurements.json as a hand, a tool or a crash may leave it: each entry checked on its
own (bad ones dropped, the rest kept), a path that holds no regular file never read, a
save that fails said in one line, and one measurement at a time across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.support.audio import REPO
from tests.support.measurements import key_of, measurements_json, written_entry
from tests.support.special_files import SAID, put_special
from voxtray.models.measurements import Measurement, MeasurementCache, cache_key

TINY = key_of("whisper-tiny.en")
BASE = key_of("whisper-base")


def entry(model: str = "whisper-tiny.en", **changes: object) -> dict[str, object]:
    return written_entry(model, **changes)


def measurements_file(path: Path, results: dict[str, object]) -> Path:
    path.write_bytes(measurements_json(results))
    return path


def without(member: str) -> dict[str, object]:
    written = entry()
    del written[member]
    return written


def with_fingerprint(**changes: object) -> dict[str, object]:
    written = entry()
    fingerprint = written["fingerprint"]
    assert isinstance(fingerprint, dict)
    return {**written, "fingerprint": {**fingerprint, **changes}}


BAD_ENTRIES = {
    "latency as text": entry(latency_ms="120"),
    "latency null": entry(latency_ms=None),
    "latency NaN": entry(latency_ms=float("nan")),
    "latency infinite": entry(latency_ms=float("inf")),
    "latency negative": entry(latency_ms=-5.0),
    "latency zero": entry(latency_ms=0),
    "latency past a float": entry(latency_ms=10**400),
    "memory negative": entry(memory_mb=-1.0),
    "latency true": entry(latency_ms=True),
    "escape codes in the provider": entry(provider="cpu\x1b]0;owned\x07"),
    "C1 control in the text": entry(text="Hello\x9b31m."),
    "filed under another model": entry(model="whisper-base"),
    "no fingerprint": without("fingerprint"),
    "fingerprint as text": entry(fingerprint="x"),
    "cores as a switch": with_fingerprint(cores=True),
    "cores none": with_fingerprint(cores=0),
    "gpu as a list": with_fingerprint(gpu=["a"]),
    "one member more": entry(extra=1),
    "model as a number": entry(model=7),
    "text instead of an entry": "fast",
    "deep nesting": json.loads("[" * 500 + "]" * 500),
}


@pytest.mark.parametrize("bad", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
def test_a_bad_entry_is_dropped_and_the_others_kept(tmp_path: Path, bad: object) -> None:
    path = measurements_file(
        tmp_path / "measurements.json", {BASE: entry("whisper-base"), TINY: bad}
    )
    kept, notes = MeasurementCache(path).read()
    assert list(kept) == [BASE]
    assert kept[BASE].latency_ms == 100.0
    assert notes == [f"ignored 1 damaged entry of {path}; measuring again"]


def test_an_escape_in_a_model_name_is_dropped_under_its_own_key_too(tmp_path: Path) -> None:
    evil = "\x1b[2J\x1b]0;owned\x07"
    path = measurements_file(
        tmp_path / "measurements.json", {cache_key(evil, "int8", "cpu"): entry(evil)}
    )
    assert MeasurementCache(path).read()[0] == {}


def test_entries_as_written_are_read_back(tmp_path: Path) -> None:
    cache = MeasurementCache(tmp_path / "measurements.json")
    written = Measurement.from_json(entry())
    cache.save({TINY: written})
    assert cache.read() == ({TINY: written}, [])


# A FIFO would block the read for good, /dev/zero grow it until memory runs out.
@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", SAID)
def test_what_is_no_regular_file_is_not_read(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "measurements.json"
    put_special(kind, path)
    said = f"cannot read {path} ({SAID[kind]}); measuring again"
    assert MeasurementCache(path).read() == ({}, [said])


@pytest.mark.parametrize(
    "raw",
    [b"{not json", b"[" * 100_000, b'{"format": 1, "results": []}', b'{"format": 9}', b"[]"],
    ids=["not JSON", "deep nesting", "results a list", "another format", "a list"],
)
def test_a_file_that_is_no_measurements_is_measured_again(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "measurements.json"
    path.write_bytes(raw)
    kept, notes = MeasurementCache(path).read()
    assert kept == {}
    assert len(notes) == 1
    assert str(path) in notes[0]
    assert notes[0].endswith("; measuring again")


def test_a_failed_save_is_said_in_one_line_and_keeps_the_old_file(tmp_path: Path) -> None:
    folder = tmp_path / "measurements.json"
    folder.mkdir()
    notes = MeasurementCache(folder).save_or_say({TINY: Measurement.from_json(entry())})
    assert notes == [
        f"cannot write {folder}: Is a directory; the results are not kept for next time"
    ]
    assert folder.is_dir()
    assert list(tmp_path.iterdir()) == [folder]  # no temp file left


HOLD_THE_TURN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from voxtray.models.measurements import MeasurementCache

    with MeasurementCache(Path(sys.argv[1])).turn(lambda: print("waited", flush=True)):
        print("holding", flush=True)
        sys.stdin.readline()
    """
)


def _holder(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_TURN, str(path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _say(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline()


def _let_go(process: subprocess.Popen[str]) -> int:
    assert process.stdin is not None
    process.stdin.write("\n")
    process.stdin.flush()
    return process.wait(timeout=30)


def test_one_measurement_at_a_time_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "measurements.json"
    first = _holder(path)
    second: subprocess.Popen[str] | None = None
    try:
        assert _say(first) == "holding\n"
        second = _holder(path)
        assert _say(second) == "waited\n"  # and it waits...
        assert _let_go(first) == 0
        assert _say(second) == "holding\n"  # ...for its turn, once the first let go
        assert _let_go(second) == 0
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def test_one_measurement_at_a_time_within_a_process(tmp_path: Path) -> None:
    cache = MeasurementCache(tmp_path / "measurements.json")
    waited = threading.Event()
    entered = threading.Event()

    def second() -> None:
        with cache.turn(waited.set):
            entered.set()

    with cache.turn(lambda: pytest.fail("the first measurement waited")):
        other = threading.Thread(target=second)
        other.start()
        assert waited.wait(30)
        assert not entered.wait(0.5)
    assert entered.wait(30)
    other.join(30)
