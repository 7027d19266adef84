"""`voxtray serve` against the official `openai` Python client: every response format,
streaming, models, auth failure, limits, a full queue, TLS. Real model (tiny.en), real clips."""

from __future__ import annotations

import concurrent.futures
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.audio import Clip
from tests.support.recognition import BELLY_CLIP, BELLY_WER, assert_heard
from tests.support.serving import (
    REPO,
    Served,
    long_quiet_flac,
    serve_home,
    serving_tiny_en,
    start_voxtray,
)
from voxtray.models.store import InstalledModel, ModelStore

openai = pytest.importorskip("openai", reason="the test extra's openai client is not installed")
pytest.importorskip("starlette", reason="the serve extra is not installed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore) -> Iterator[Served]:
    flags = ["--max-upload-mb", "1", "--max-audio-s", "60", "--max-queue", "1"]
    flags += ["--body-timeout-s", "3", "--wyoming-port", "0"]
    with serving_tiny_en(tmp_path_factory.mktemp("serve"), model_store, *flags) as server:
        yield server


@pytest.fixture(scope="module")
def client(served: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.base_url, api_key=served.token, max_retries=0)


@pytest.fixture(scope="module")
def clip(eval_clips: list[Clip]) -> Clip:
    return next(c for c in eval_clips if c.id == BELLY_CLIP)


def trusting(cert: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cert))


def test_key_made_once_and_private(served: Served) -> None:
    key = Path(served.lines[0].rsplit("kept in ", 1)[1].split(")")[0])
    assert key.stat().st_mode & 0o777 == 0o600
    assert served.token.startswith("vx-")
    assert served.token in served.lines[0]


def test_json_says_where_it_ran(client: openai.OpenAI, clip: Clip) -> None:
    with clip.path.open("rb") as audio:
        raw = client.audio.transcriptions.with_raw_response.create(model="whisper-1", file=audio)
    result = raw.parse()
    assert_heard(clip.reference, result.text, BELLY_WER)
    assert raw.headers["x-voxtray-provider"] == "cpu"
    assert raw.headers["x-voxtray-model"] == "whisper-tiny.en"
    assert raw.headers["x-voxtray-precision"] == "int8"
    assert raw.headers["x-voxtray-device"]
    assert float(raw.headers["x-voxtray-inference-ms"]) > 0
    assert float(raw.headers["x-voxtray-queue-ms"]) >= 0


def test_text_srt_vtt_verbose(client: openai.OpenAI, clip: Clip) -> None:
    texts = {}
    for fmt in ("text", "srt", "vtt", "verbose_json"):
        with clip.path.open("rb") as audio:
            texts[fmt] = client.audio.transcriptions.create(
                model="whisper-tiny.en",
                file=audio,
                response_format=fmt,
                language="en",
                prompt="A reading.",
                temperature=0.0,
            )
    assert_heard(clip.reference, str(texts["text"]), BELLY_WER)
    srt = str(texts["srt"])
    assert srt.startswith("1\n00:00:")
    assert " --> " in srt
    assert "," in srt.splitlines()[1]
    vtt = str(texts["vtt"])
    assert vtt.startswith("WEBVTT\n\n00:00:")
    assert "." in vtt.splitlines()[2]
    verbose = texts["verbose_json"]
    assert verbose.language == "english"
    assert verbose.duration == pytest.approx(clip.duration_s, abs=0.05)
    assert verbose.segments
    assert verbose.segments[0].end <= clip.duration_s + 0.01
    assert_heard(clip.reference, verbose.text, BELLY_WER)
    ran = verbose.model_extra["voxtray"]
    assert ran["provider"] == "cpu"
    assert ran["model"] == "whisper-tiny.en"
    assert ran["inference_ms"] > 0
    assert ran["queue_ms"] >= 0


def test_streaming_deltas_then_done(client: openai.OpenAI, eval_clips: list[Clip]) -> None:
    # A clip long enough for the VAD to cut it, so more than one delta can arrive.
    clip = max((c for c in eval_clips if c.duration_s < 30), key=lambda c: c.duration_s)
    with clip.path.open("rb") as audio:
        stream = client.audio.transcriptions.create(model="whisper-1", file=audio, stream=True)
        events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[-1] == "transcript.text.done"
    assert kinds.count("transcript.text.done") == 1
    assert kinds[:-1]
    assert set(kinds[:-1]) == {"transcript.text.delta"}
    done = events[-1]
    assert "".join(e.delta for e in events[:-1]) == done.text
    assert_heard(clip.reference, done.text, BELLY_WER)
    assert done.model_extra["voxtray"]["provider"] == "cpu"


def test_models(client: openai.OpenAI) -> None:
    ids = [model.id for model in client.models.list()]
    assert ids[0] == "whisper-tiny.en"
    assert "whisper-1" in ids


def test_wrong_key_refused(served: Served, clip: Clip) -> None:
    bad = openai.OpenAI(base_url=served.base_url, api_key="vx-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught, clip.path.open("rb") as audio:
        bad.audio.transcriptions.create(model="whisper-1", file=audio)
    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"


def test_over_limit_file_refused(client: openai.OpenAI, tmp_path: Path) -> None:
    big = tmp_path / "big.wav"
    big.write_bytes(b"RIFF" + bytes(2 * 2**20))
    with pytest.raises(openai.APIStatusError) as caught, big.open("rb") as audio:
        client.audio.transcriptions.create(model="whisper-1", file=audio)
    assert caught.value.status_code == 413
    assert caught.value.code == "file_too_large"


def test_over_long_audio_refused(client: openai.OpenAI, tmp_path: Path) -> None:
    quiet = long_quiet_flac(tmp_path / "long.flac", 90)
    assert quiet.stat().st_size < 2**20
    with pytest.raises(openai.APIStatusError) as caught, quiet.open("rb") as audio:
        client.audio.transcriptions.create(model="whisper-1", file=audio)
    assert caught.value.status_code == 413
    assert caught.value.code == "audio_too_long"


def test_full_queue_answers_503_with_retry_after(served: Served, eval_clips: list[Clip]) -> None:
    clip = max((c for c in eval_clips if c.duration_s < 15), key=lambda c: c.duration_s)
    data = clip.path.read_bytes()

    def post() -> httpx.Response:
        return httpx.post(
            served.base_url + "/audio/transcriptions",
            headers={"Authorization": f"Bearer {served.token}"},
            files={"file": ("a.wav", data, "audio/wav")},
            data={"model": "whisper-1"},
            timeout=120,
        )

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: post(), range(6)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses.count(200) >= 2, statuses
    assert statuses.count(503) >= 1, statuses
    busy = next(a for a in answers if a.status_code == 503)
    assert int(busy.headers["retry-after"]) >= 1
    assert busy.json()["error"]["code"] == "server_busy"
    assert httpx.get(served.url + "/health", timeout=5).json()["status"] == "ok"


def test_diagnostics(served: Served) -> None:
    headers = {"Authorization": f"Bearer {served.token}"}
    assert httpx.get(served.base_url + "/diagnostics", timeout=5).status_code == 401
    body = httpx.get(served.base_url + "/diagnostics", headers=headers, timeout=120).json()
    assert body["service"]["provider"] == "cpu"
    assert body["gpu_memory"] is None
    assert body["gpu_unavailable"]
    assert body["selftest"]["verdict"] in ("cpu-ok", "no-gpu")


def test_no_auth_refused_off_loopback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "voxtray", "serve", "--host", "0.0.0.0", "--no-auth"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "voxtray: error: --no-auth is only allowed on a loopback address, not 0.0.0.0"
    ]


def test_tls(tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel, clip: Clip) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    home = serve_home(tmp_path, model_store)
    server = start_voxtray(
        home, "--model", tiny_en.name, "--no-auth", "--tls-cert", str(cert), "--tls-key", str(key)
    )
    try:
        assert server.url.startswith("https://")
        secure = openai.OpenAI(
            base_url=server.base_url,
            api_key="unused",
            max_retries=0,
            http_client=openai.DefaultHttpxClient(verify=trusting(cert)),
        )
        with clip.path.open("rb") as audio:
            text = secure.audio.transcriptions.create(model="whisper-1", file=audio).text
        assert_heard(clip.reference, text, BELLY_WER)
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.url + "/health", timeout=5)  # not trusted without the cert
    finally:
        server.stop()
