"""Hostile but plausible command lines, run as a user runs them (`python -m voxtray` in a fresh
VOXTRAY_HOME, the real models): each ends in results or a one-line error with a documented
exit code, never an internal error."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.audio import SPEECH_DIR
from tests.support.homes import linked_home
from tests.support.process import one_error_line, run_voxtray
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from voxtray.errors import ExitCode
from voxtray.models.store import ModelStore

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """`path` made read-only for everyone, root included, by a read-only bind mount."""
    path.mkdir(parents=True, exist_ok=True)
    steps = (
        ["mount", "--bind", str(path), str(path)],
        ["mount", "-o", "remount,bind,ro", str(path)],
    )
    for number, step in enumerate(steps):
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            if number:
                subprocess.run(["umount", str(path)], check=False)
            pytest.skip(f"cannot make a read-only mount here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def assert_no_internal_error(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode != ExitCode.INTERNAL, result.stderr
    assert "internal error" not in result.stderr
    assert "Traceback" not in result.stderr


# --- 1. file names that are not UTF-8 ------------------------------------------------------


def test_file_name_not_utf8_is_transcribed_and_json_stays_valid(
    installed: ModelStore, tmp_path: Path
) -> None:
    latin1 = os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9.wav")
    shutil.copyfile(CLIP, latin1)
    missing = os.fsdecode(os.fsencode(tmp_path) + b"/gone\xff.wav")
    home = linked_home(tmp_path, installed)
    result = run_voxtray("transcribe", latin1, missing, str(CLIP), "--json", home=home)
    assert result.returncode == ExitCode.NOT_FOUND, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["file"] for row in rows] == [f"{tmp_path}/caf\\xe9.wav", str(CLIP)]
    assert len(rows) == 2
    for row in rows:
        assert_heard(BIRCH, row["text"], SENTENCE_WER)
    assert one_error_line(result) == f"voxtray: error: {tmp_path}/gone\\xff.wav: no such file"


def test_file_name_not_utf8_in_plain_text(installed: ModelStore, tmp_path: Path) -> None:
    latin1 = os.fsdecode(os.fsencode(tmp_path) + b"/na\xefve.wav")
    shutil.copyfile(CLIP, latin1)
    result = run_voxtray("transcribe", latin1, home=linked_home(tmp_path, installed))
    assert result.returncode == ExitCode.OK, result.stderr
    assert_heard(BIRCH, result.stdout, SENTENCE_WER)


# --- 2. a provider that is not there keeps stdout clean ------------------------------------


@pytest.mark.parametrize("provider", ["tensorrt", "cuda"])
def test_missing_gpu_provider_leaves_only_json_on_stdout(
    installed: ModelStore, tmp_path: Path, provider: str
) -> None:
    home = linked_home(tmp_path, installed)
    result = run_voxtray("transcribe", str(CLIP), "--provider", provider, "--json", home=home)
    assert result.returncode == ExitCode.OK, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    row = json.loads(lines[0])
    assert_heard(BIRCH, row["text"], SENTENCE_WER)
    assert "EP Error" not in result.stdout


# --- 3. --threads ----------------------------------------------------------------------------


@pytest.mark.parametrize("threads", ["0", "-1", "1000", str((os.cpu_count() or 1) + 1), "two"])
def test_threads_out_of_range_is_a_usage_error_at_once(
    installed: ModelStore, tmp_path: Path, threads: str
) -> None:
    began = time.monotonic()
    result = run_voxtray(
        "transcribe", str(CLIP), "--threads", threads, home=linked_home(tmp_path, installed)
    )
    assert time.monotonic() - began < 30  # refused before any model is loaded
    assert result.returncode == ExitCode.USAGE
    assert result.stdout == ""
    assert f"from 1 to {os.cpu_count()}" in result.stderr.splitlines()[-1]


def test_threads_all_cpus_is_accepted(installed: ModelStore, tmp_path: Path) -> None:
    home = linked_home(tmp_path, installed)
    result = run_voxtray("transcribe", str(CLIP), "--threads", str(os.cpu_count()), home=home)
    assert result.returncode == ExitCode.OK, result.stderr
    assert_heard(BIRCH, result.stdout, SENTENCE_WER)


def test_bench_threads_follow_the_same_rule(installed: ModelStore, tmp_path: Path) -> None:
    manifest = tmp_path / "m.tsv"
    manifest.write_text("id\twav\treference\n", encoding="utf-8")
    home = linked_home(tmp_path, installed)
    result = run_voxtray("bench", "--manifest", str(manifest), "--threads", "0", home=home)
    assert result.returncode == ExitCode.USAGE


# --- 4. bench without usable clips -------------------------------------------------------


def _bench(home: Path, manifest: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_voxtray(
        "bench",
        "--manifest",
        str(manifest),
        "--peer",
        "none",
        "--engines",
        "ort",
        *extra,
        home=home,
    )


@pytest.mark.parametrize(
    ("content", "extra", "words"),
    [
        ("id\twav\treference\n", (), "no clips to measure"),
        ("", (), "lacks the column(s) id, wav, reference"),
        ("name\tfile\n", (), "lacks the column(s) id, wav, reference"),
        (f"id\twav\treference\nx\t{CLIP}\tthe birch\n", ("--max-clip-s", "1"), "at most 1 s"),
        ("id\twav\treference\nx\t\tnothing\n", (), "line 2: no clip"),
    ],
    ids=["header-only", "empty-file", "wrong-columns", "all-too-long", "blank-clip"],
)
def test_bench_without_usable_clips_is_one_line_exit_7(
    installed: ModelStore, tmp_path: Path, content: str, extra: tuple[str, ...], words: str
) -> None:
    manifest = tmp_path / "m.tsv"
    manifest.write_text(content, encoding="utf-8")
    result = _bench(linked_home(tmp_path, installed), manifest, *extra)
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert words in one_error_line(result)


def test_bench_clips_all_missing_is_exit_3(installed: ModelStore, tmp_path: Path) -> None:
    manifest = tmp_path / "m.tsv"
    manifest.write_text("id\twav\treference\nx\tnope.wav\thello\n", encoding="utf-8")
    result = _bench(linked_home(tmp_path, installed), manifest)
    assert result.returncode == ExitCode.NOT_FOUND
    assert "nope.wav" in one_error_line(result)


@pytest.mark.parametrize("kind", ["directory", "dev-zero", "binary"])
def test_bench_manifest_that_is_not_a_text_file_is_exit_7(
    installed: ModelStore, tmp_path: Path, kind: str
) -> None:
    manifest = {"directory": tmp_path, "dev-zero": Path("/dev/zero"), "binary": CLIP}[kind]
    result = _bench(linked_home(tmp_path, installed), manifest)
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert str(manifest) in one_error_line(result)


def test_bench_report_into_a_folder_is_refused_before_measuring(
    installed: ModelStore, tmp_path: Path
) -> None:
    manifest = tmp_path / "m.tsv"
    manifest.write_text(f"id\twav\treference\nx\t{CLIP}\t{BIRCH}\n", encoding="utf-8")
    home = linked_home(tmp_path, installed)
    result = _bench(home, manifest, "--json", str(tmp_path))
    assert result.returncode == ExitCode.BAD_INPUT
    assert "--json" in one_error_line(result)
    with read_only(tmp_path / "ro") as folder:
        result = _bench(home, manifest, "--json", str(folder / "out.json"))
    assert result.returncode == ExitCode.DISK
    assert str(folder) in one_error_line(result)


# --- 5. a data folder that cannot be written ---------------------------------------------


def test_read_only_home(installed: ModelStore, tmp_path: Path) -> None:
    linked = linked_home(tmp_path, installed)
    empty = tmp_path / "empty-home"
    with read_only(linked), read_only(empty):
        app = run_voxtray(home=linked, timeout=120)
        status = run_voxtray("status", home=linked)
        transcribe = run_voxtray("transcribe", str(CLIP), home=linked)
        install = run_voxtray("models", "install", "whisper-tiny.en", home=empty)
        transcribe_empty = run_voxtray("transcribe", str(CLIP), home=empty)
    assert app.returncode == ExitCode.DISK, app.stderr
    assert one_error_line(app) == (
        f"voxtray: error: cannot write the data folder {linked}: Read-only file system"
    )
    # Nothing needs writing to ask, and with a read-only folder nothing can be running.
    assert status.returncode == ExitCode.NOT_RUNNING
    one_error_line(status)
    # Installed models are only read.
    assert transcribe.returncode == ExitCode.OK, transcribe.stderr
    assert_heard(BIRCH, transcribe.stdout, SENTENCE_WER)
    for result in (install, transcribe_empty):
        assert result.returncode == ExitCode.DISK, result.stderr
        line = one_error_line(result)
        assert str(empty / "models") in line
        assert "Read-only file system" in line


@pytest.mark.parametrize("kind", ["file", "dangling-link"])
def test_run_folder_that_is_not_a_folder_is_exit_6(
    installed: ModelStore, tmp_path: Path, kind: str
) -> None:
    home = linked_home(tmp_path, installed)
    run = home / "run"
    if kind == "file":
        run.write_text("not a folder")
        words = "it is a file, not a folder"
    else:
        run.symlink_to(tmp_path / "nowhere")
        words = f"it links to {tmp_path / 'nowhere'}, which does not exist"
    for args in ((), ("status",), ("toggle", "--json")):
        result = run_voxtray(*args, home=home, timeout=120)
        assert result.returncode == ExitCode.DISK, (args, result.stderr)
        assert one_error_line(result) == f"voxtray: error: cannot use the run folder {run}: {words}"
        assert result.stdout == ""


def test_home_under_a_file_is_exit_6(installed: ModelStore, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run_voxtray(home=blocker / "home", timeout=120)
    assert result.returncode == ExitCode.DISK, result.stderr
    assert str(blocker / "home") in one_error_line(result)


# --- 6. other hostile input ----------------------------------------------------------------


def test_files_that_are_not_audio_each_get_one_line(installed: ModelStore, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    odd = [str(tmp_path), "/dev/zero", str(fifo), str(empty), ""]
    home = linked_home(tmp_path, installed)
    result = run_voxtray("transcribe", *odd, str(CLIP), "--json", home=home, timeout=300)
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["file"] for row in rows] == [str(CLIP)]
    errors = [line for line in result.stderr.splitlines() if line.startswith("voxtray:")]
    assert errors == [
        f"voxtray: error: {tmp_path}: is a directory",
        "voxtray: error: /dev/zero: not a regular file",
        f"voxtray: error: {fifo}: not a regular file",
        f"voxtray: error: {empty}: empty file",
        "voxtray: error: '': no such file (an empty file name)",
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("transcribe", str(CLIP), "--model", ""),
        ("selftest", "--runs", "0"),
        ("selftest", "--runs", "10000000000"),
        ("selftest", "--gpu-index", "-1"),
        ("bench", "--manifest", "m.tsv", "--repeats", "0"),
        ("bench", "--manifest", "m.tsv", "--max-clip-s", "nan"),
        ("bench", "--manifest", "m.tsv", "--max-clip-s", "-3"),
        ("bench", "--manifest", "m.tsv", "--engines", ","),
        ("bench", "--manifest", "m.tsv", "--matrix", "--providers", ""),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else str(value),
)
def test_out_of_range_options_are_usage_errors(
    installed: ModelStore, tmp_path: Path, args: tuple[str, ...]
) -> None:
    began = time.monotonic()
    result = run_voxtray(*args, home=linked_home(tmp_path, installed))
    assert time.monotonic() - began < 30
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert_no_internal_error(result)
    assert result.stdout == ""


@pytest.mark.parametrize("command", [("models", "list", "--json"), ("transcribe", str(CLIP))])
def test_reader_of_stdout_quitting_is_quiet(
    installed: ModelStore, tmp_path: Path, command: tuple[str, ...]
) -> None:
    env = {**os.environ, "VOXTRAY_HOME": str(linked_home(tmp_path, installed))}
    env.pop("VOXTRAY_DEBUG", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "voxtray", *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert child.stdout is not None
    assert child.stderr is not None
    child.stdout.close()  # the reader quits before the first line (`voxtray ... | head -0`)
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=300) == 141
    assert "Traceback" not in stderr
    assert "error" not in stderr


def test_home_that_is_a_file_is_exit_6_for_status_too(tmp_path: Path) -> None:
    home = tmp_path / "a-file"
    home.write_text("not a folder")
    for args in ((), ("status",)):
        result = run_voxtray(*args, home=home, timeout=120)
        assert result.returncode == ExitCode.DISK, (args, result.stderr)
        assert one_error_line(result) == (
            f"voxtray: error: cannot use the data folder {home}: it is a file, not a folder"
        )


def test_home_whose_name_is_not_utf8_is_exit_6(tmp_path: Path) -> None:
    home = Path(os.fsdecode(os.fsencode(tmp_path) + b"/h\xe9"))
    for args in ((), ("transcribe", str(CLIP)), ("models", "install", "whisper-tiny.en")):
        result = run_voxtray(*args, home=home, timeout=120)
        assert result.returncode == ExitCode.DISK, (args, result.stderr)
        line = one_error_line(result)
        assert f"{tmp_path}/h\\xe9" in line
        assert "not valid UTF-8" in line
    assert not home.exists()  # nothing was created there
