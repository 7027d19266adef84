"""`voxtray models ...` as a user runs it: a real process, its stdout, stderr and exit code."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from tests.support.process import one_error_line, run_voxtray
from tests.support.store import Setup
from voxtray.cli.progress import StderrProgress
from voxtray.errors import ExitCode
from voxtray.models.progress import InstallProgress, InstallStep


@pytest.fixture
def env(tmp_path: Path, setup: Setup) -> dict[str, str]:
    return {**os.environ, "VOXTRAY_HOME": str(tmp_path / "home")}


def test_list_json_shows_the_real_catalog(tmp_path: Path) -> None:
    env = {**os.environ, "VOXTRAY_HOME": str(tmp_path)}
    env.pop("VOXTRAY_CATALOG", None)
    result = run_voxtray("models", "list", "--json", env=env)
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
    result = run_voxtray("models", "install", "demo-vad", "--json", env=env)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)["results"]
    assert row["installed"]
    assert not row["already_installed"]
    assert "installed demo-vad" in result.stderr

    ok = run_voxtray("models", "verify", "--json", env=env)
    assert ok.returncode == 0
    assert json.loads(ok.stdout)["results"][0]["ok"] is True

    weights = Path(row["path"]) / "vad.onnx"
    weights.write_bytes(weights.read_bytes()[:100])
    bad = run_voxtray("models", "verify", "demo-vad", env=env)
    assert bad.returncode == ExitCode.CORRUPT
    assert "vad.onnx is truncated (100 of 700000 bytes)" in bad.stderr
    assert "voxtray models install demo-vad --force" in bad.stderr

    removed = run_voxtray("models", "remove", "demo-vad", "--json", env=env)
    assert removed.returncode == 0
    assert json.loads(removed.stdout) == {"results": [{"name": "demo-vad", "removed": True}]}
    gone = run_voxtray("models", "verify", "demo-vad", env=env)
    assert gone.returncode == ExitCode.NOT_FOUND
    assert "demo-vad: not installed (install with: voxtray models install demo-vad)" in gone.stderr


def test_a_model_not_installed_names_the_command_that_installs_it(env: dict[str, str]) -> None:
    result = run_voxtray("models", "recommend", "demo-vad", env=env)
    assert result.returncode == ExitCode.NOT_FOUND
    assert one_error_line(result) == (
        "voxtray: error: model demo-vad is not installed; run: voxtray models install demo-vad"
    )


def test_install_progress_is_a_line_per_step_off_a_terminal() -> None:
    stream = io.StringIO()
    show = StderrProgress("demo", stream)
    show(InstallProgress(InstallStep.DOWNLOADING, "a.whl", 0, 2000))
    show(InstallProgress(InstallStep.DOWNLOADING, "a.whl", 2000, 2000))
    show(InstallProgress(InstallStep.UNPACKING, total=1))
    show(InstallProgress(InstallStep.CONVERTING, "building encoder", 1, 4))
    show(InstallProgress(InstallStep.INSTALLED, done=1, total=1))
    assert stream.getvalue().splitlines() == [
        "demo: downloading a.whl",
        "demo: unpacking",
        "demo: converting: building encoder",
        "demo: installed",
    ]


def test_unknown_model_is_one_line_and_exit_3(env: dict[str, str]) -> None:
    result = run_voxtray("models", "install", "whisper-huge", env=env)
    assert result.returncode == ExitCode.NOT_FOUND
    assert "unknown model 'whisper-huge'" in one_error_line(result)


def test_no_network_is_one_line_and_exit_5(env: dict[str, str]) -> None:
    env = {**env, "VOXTRAY_PYPI_INDEX": "http://127.0.0.1:9/simple/"}
    result = run_voxtray("models", "install", "demo-vad", env=env)
    assert result.returncode == ExitCode.NETWORK
    one_error_line(result)
    assert not (Path(env["VOXTRAY_HOME"]) / "models" / "demo-vad").exists()


def test_full_disk_is_one_line_and_exit_6(env: dict[str, str]) -> None:
    result = run_voxtray("models", "install", "demo-split", env=env, limit_file_bytes=200_000)
    assert result.returncode == ExitCode.DISK, result.stderr
    assert "cannot write" in one_error_line(result)
    models = Path(env["VOXTRAY_HOME"]) / "models"
    assert not (models / "demo-split").exists()
    # Nothing half-built remains where a reader would look, and a retry succeeds.
    assert not list((models / ".staging").iterdir())
    retry = run_voxtray("models", "install", "demo-split", env=env)
    assert retry.returncode == 0, retry.stderr


def test_unwritable_home_is_one_line_and_exit_6(env: dict[str, str], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = {**env, "VOXTRAY_HOME": str(blocker / "home")}
    result = run_voxtray("models", "install", "demo-vad", env=env)
    assert result.returncode == ExitCode.DISK
    one_error_line(result)


def test_install_without_names_is_a_usage_error(env: dict[str, str]) -> None:
    result = run_voxtray("models", "install", env=env)
    assert result.returncode == ExitCode.USAGE
    one_error_line(result)
