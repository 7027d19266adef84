"""Remote engines against a real `voxtray serve` (OpenAI API and Wyoming), and
`voxtray transcribe --server` falling back to the local model when the server is
unreachable, slow or refuses."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.audio import Clip, read_wav
from tests.support.models import ensure_installed
from tests.support.recognition import BELLY_CLIP, BELLY_WER, assert_heard
from tests.support.remote import transcribe_with_server
from tests.support.serving import Served, serve_home, start_voxtray
from voxtray.inference.recognizers.base import device_of, fallback_of
from voxtray.inference.recognizers.remote_openai import RemoteError, RemoteOpenAIRecognizer
from voxtray.inference.recognizers.remote_wyoming import RemoteWyomingRecognizer
from voxtray.inference.remote import FallbackRecognizer, fallback_fields
from voxtray.models.store import InstalledModel, ModelStore

pytest.importorskip("starlette", reason="the serve extra is not installed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def home(
    tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore, tiny_en: InstalledModel
) -> Path:
    ensure_installed(model_store, "silero-vad-v6")
    return serve_home(tmp_path_factory.mktemp("remote"), model_store)


@pytest.fixture(scope="module")
def served(home: Path, tiny_en: InstalledModel) -> Iterator[Served]:
    server = start_voxtray(home, "--model", tiny_en.name, "--wyoming-port", "0")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def clip(eval_clips: list[Clip]) -> Clip:
    return next(c for c in eval_clips if c.id == BELLY_CLIP)


def test_openai_engine(served: Served, clip: Clip) -> None:
    remote = RemoteOpenAIRecognizer(served.url, api_key=served.token, timeout_s=60)
    assert remote.provider == "remote:unknown"
    transcript = remote.transcribe(read_wav(clip.path))
    assert_heard(clip.reference, transcript.text, BELLY_WER)
    assert transcript.provider == "remote:cpu"
    assert remote.model == "whisper-tiny.en"
    assert transcript.timings_ms["remote"] >= transcript.timings_ms["server_inference"] > 0


def test_wyoming_engine(served: Served, clip: Clip) -> None:
    remote = RemoteWyomingRecognizer(f"tcp://127.0.0.1:{served.wyoming_port}", timeout_s=60)
    remote.warmup()
    assert remote.model == "whisper-tiny.en"
    transcript = remote.transcribe(read_wav(clip.path))
    assert_heard(clip.reference, transcript.text, BELLY_WER)
    assert transcript.provider == "remote:cpu"


def test_refusal_is_a_remote_error(served: Served, clip: Clip) -> None:
    remote = RemoteOpenAIRecognizer(served.url, api_key="vx-wrong", timeout_s=10)
    with pytest.raises(RemoteError, match=r"refused: 401 Incorrect or missing API key"):
        remote.transcribe(read_wav(clip.path))
    wyoming = RemoteWyomingRecognizer(served.url.replace("http://", "tcp://"), timeout_s=5)
    with pytest.raises(RemoteError):
        wyoming.warmup()  # an HTTP server is not a Wyoming server


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    listener.close()


def test_cli_through_server(home: Path, served: Served, clip: Clip) -> None:
    result, stderr = transcribe_with_server(home, clip, "--server", served.url, key=served.token)
    assert result["provider"] == "remote:cpu"
    assert result["engine"] == "remote"
    assert "fallback" not in result
    assert "server failed" not in stderr
    assert_heard(clip.reference, result["text"], BELLY_WER)


def test_cli_falls_back(home: Path, served: Served, clip: Clip, silent_server: int) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    cases = [
        (["--server", f"http://127.0.0.1:{closed}"], "", "Connection refused"),
        (
            ["--server", f"http://127.0.0.1:{silent_server}", "--remote-timeout-s", "1"],
            "",
            "no answer within 1 s",
        ),
        (["--server", served.url], "vx-wrong", "refused: 401"),
        (
            ["--server", f"tcp://127.0.0.1:{silent_server}", "--remote-timeout-s", "1"],
            "",
            "no answer within 1 s",
        ),
    ]
    for args, key, reason in cases:
        result, stderr = transcribe_with_server(home, clip, *args, key=key)
        assert reason in result["fallback"], result
        assert result["provider"] == "cpu"
        assert result["engine"] == "ort"
        assert stderr.count("server failed") == 1
        assert stderr.startswith("voxtray: server failed, using the local model: ")
        assert_heard(clip.reference, result["text"], BELLY_WER)


class _Flaky:
    engine = "remote"
    model = "m"
    provider = "remote:x"

    def __init__(self) -> None:
        self.calls = 0

    def warmup(self) -> None:
        pass

    def transcribe(self, audio: object) -> object:
        self.calls += 1
        raise RemoteError("gone")


def test_fallback_happens_once(tiny_en: InstalledModel, clip: Clip) -> None:
    from voxtray.inference.engines import EngineChoice, create_recognizer

    heard: list[str] = []
    flaky = _Flaky()
    recognizer = FallbackRecognizer(
        flaky, lambda: create_recognizer(tiny_en, EngineChoice(provider="cpu")), heard.append
    )
    audio = read_wav(clip.path)
    first = recognizer.transcribe(audio)
    second = recognizer.transcribe(audio)
    assert first.text == second.text
    assert first.provider == "cpu"
    assert flaky.calls == 1
    assert heard == ["gone"]
    assert recognizer.fallback == "gone"
    assert recognizer.engine == "ort"
    # The ability is declared (FallsBack, NamesDevice), so callers ask it by type.
    assert fallback_of(recognizer) == "gone"
    assert fallback_fields(recognizer) == {"fallback": "gone"}
    assert device_of(recognizer) == ""  # the local model names no server device
    assert fallback_of(recognizer.current) is None
    assert fallback_fields(recognizer.current) == {}
