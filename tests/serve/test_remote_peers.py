"""Voxtray's remote engines against peer servers nobody here wrote, run offline on the
test store's CTranslate2 weights: faster-whisper-server (OpenAI API) and
wyoming-faster-whisper. They live in their own venv (packaging/dev.sh test makes it),
because they pull the CPU onnxruntime."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.audio import Clip, read_wav
from tests.support.recognition import BELLY_CLIP, BELLY_WER, assert_heard
from tests.support.serving import PEERS_VENV, free_port, wait_for_port
from voxtray.inference.recognizers.remote_openai import RemoteOpenAIRecognizer
from voxtray.inference.recognizers.remote_wyoming import RemoteWyomingRecognizer
from voxtray.models.store import InstalledModel

pytestmark = pytest.mark.slow

PEER_PYTHON = PEERS_VENV / "bin" / "python"
if not PEER_PYTHON.exists():
    pytest.skip(
        f"no peer-server venv at {PEERS_VENV} (packaging/dev.sh test makes it)",
        allow_module_level=True,
    )


def _start(args: list[str], port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(PEER_PYTHON), "-m", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=log.parent,
        )
    try:
        wait_for_port(port, process, 120)
    except AssertionError:
        process.kill()
        process.wait(timeout=10)
        raise AssertionError(log.read_text(errors="replace")[-2000:]) from None
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


@pytest.fixture(scope="module")
def clip(eval_clips: list[Clip]) -> Clip:
    return next(c for c in eval_clips if c.id == BELLY_CLIP)


@pytest.fixture(scope="module")
def faster_whisper_server(
    tmp_path_factory: pytest.TempPathFactory, tiny_en: InstalledModel
) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("fws") / "server.log"
    process = _start(
        [
            "faster_whisper_server",
            str(tiny_en.path / "ct2"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        port,
        log,
    )
    yield f"http://127.0.0.1:{port}"
    _stop(process)


@pytest.fixture(scope="module")
def wyoming_faster_whisper(
    tmp_path_factory: pytest.TempPathFactory, tiny_en: InstalledModel
) -> Iterator[str]:
    port = free_port()
    folder = tmp_path_factory.mktemp("wfw")
    process = _start(
        [
            "wyoming_faster_whisper",
            "--uri",
            f"tcp://127.0.0.1:{port}",
            "--model",
            str(tiny_en.path / "ct2"),
            "--data-dir",
            str(folder / "data"),
            "--local-files-only",
            "--stt-library",
            "faster-whisper",
        ],
        port,
        folder / "server.log",
    )
    yield f"tcp://127.0.0.1:{port}"
    _stop(process)


def test_faster_whisper_server(faster_whisper_server: str, clip: Clip) -> None:
    remote = RemoteOpenAIRecognizer(faster_whisper_server, timeout_s=120)
    transcript = remote.transcribe(read_wav(clip.path))
    assert_heard(clip.reference, transcript.text, BELLY_WER)
    assert transcript.provider == "remote:unknown"  # it does not say where it ran
    assert remote.model == "whisper-1"


def test_wyoming_faster_whisper(
    wyoming_faster_whisper: str, clip: Clip, tiny_en: InstalledModel
) -> None:
    remote = RemoteWyomingRecognizer(wyoming_faster_whisper, timeout_s=120)
    remote.warmup()
    assert remote.model == str(tiny_en.path / "ct2")
    transcript = remote.transcribe(read_wav(clip.path))
    assert_heard(clip.reference, transcript.text, BELLY_WER)
    assert transcript.provider == "remote:unknown"
