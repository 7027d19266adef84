"""`voxtray models ...` as a user runs it: a real process, its stdout, stderr and exit code."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_store import Setup, setup  # noqa: F401  (fixture)
from voxtray.errors import ExitCode


def voxtray(
    *args: str, env: dict[str, str], limit_file_bytes: int | None = None
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if limit_file_bytes is not None:
            # Writes past this size fail with EFBIG, as they would on a full disk.
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    return subprocess.run(
        [sys.executable, "-m", "voxtray", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


@pytest.fixture
def env(tmp_path: Path, setup: Setup) -> dict[str, str]:  # noqa: F811
    return {**os.environ, "VOXTRAY_HOME": str(tmp_path / "home")}


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line of stderr (progress lines may come around it)."""
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("voxtray: error: ")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]


def test_list_json_shows_the_real_catalog(tmp_path: Path) -> None:
    env = {**os.environ, "VOXTRAY_HOME": str(tmp_path)}
    env.pop("VOXTRAY_CATALOG", None)
    result = voxtray("models", "list", "--json", env=env)
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["models"]}
    assert rows["whisper-tiny.en"]["default"]
    assert rows["silero-vad-v6"]["default"]
    assert rows["whisper-tiny.en"]["precisions"] == ["fp32", "int8"]
    assert {row["family"] for row in rows.values()} == {
        "whisper",
        "nemo-transducer",
        "nemo-ctc",
        "moonshine",
        "silero-vad",
    }
    assert not any(row["installed"] for row in rows.values())


def test_install_verify_damage_remove(env: dict[str, str]) -> None:
    result = voxtray("models", "install", "demo-vad", "--json", env=env)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)["results"]
    assert row["installed"]
    assert not row["already_installed"]
    assert "installed demo-vad" in result.stderr

    ok = voxtray("models", "verify", "--json", env=env)
    assert ok.returncode == 0
    assert json.loads(ok.stdout)["results"][0]["ok"] is True

    weights = Path(row["path"]) / "vad.onnx"
    weights.write_bytes(weights.read_bytes()[:100])
    bad = voxtray("models", "verify", "demo-vad", env=env)
    assert bad.returncode == ExitCode.CORRUPT
    assert "vad.onnx is truncated (100 of 700000 bytes)" in bad.stderr
    assert "voxtray models install demo-vad --force" in bad.stderr

    removed = voxtray("models", "remove", "demo-vad", "--json", env=env)
    assert removed.returncode == 0
    assert json.loads(removed.stdout) == {"results": [{"name": "demo-vad", "removed": True}]}
    gone = voxtray("models", "verify", "demo-vad", env=env)
    assert gone.returncode == ExitCode.NOT_FOUND


def test_unknown_model_is_one_line_and_exit_3(env: dict[str, str]) -> None:
    result = voxtray("models", "install", "whisper-huge", env=env)
    assert result.returncode == ExitCode.NOT_FOUND
    assert "unknown model 'whisper-huge'" in one_error_line(result)


def test_no_network_is_one_line_and_exit_5(env: dict[str, str]) -> None:
    env = {**env, "VOXTRAY_PYPI_INDEX": "http://127.0.0.1:9/simple/"}
    result = voxtray("models", "install", "demo-vad", env=env)
    assert result.returncode == ExitCode.NETWORK
    one_error_line(result)
    assert not (Path(env["VOXTRAY_HOME"]) / "models" / "demo-vad").exists()


def test_full_disk_is_one_line_and_exit_6(env: dict[str, str]) -> None:
    result = voxtray("models", "install", "demo-split", env=env, limit_file_bytes=200_000)
    assert result.returncode == ExitCode.DISK, result.stderr
    assert "cannot write" in one_error_line(result)
    models = Path(env["VOXTRAY_HOME"]) / "models"
    assert not (models / "demo-split").exists()
    # Nothing half-built remains where a reader would look, and a retry succeeds.
    assert not list((models / ".staging").iterdir())
    retry = voxtray("models", "install", "demo-split", env=env)
    assert retry.returncode == 0, retry.stderr


def test_unwritable_home_is_one_line_and_exit_6(env: dict[str, str], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = {**env, "VOXTRAY_HOME": str(blocker / "home")}
    result = voxtray("models", "install", "demo-vad", env=env)
    assert result.returncode == ExitCode.DISK
    one_error_line(result)


def test_install_without_names_is_a_usage_error(env: dict[str, str]) -> None:
    result = voxtray("models", "install", env=env)
    assert result.returncode == ExitCode.USAGE
    one_error_line(result)
