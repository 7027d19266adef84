"""The server's inference job in process: VAD segments a short pause apart are recognised
as one call, and the server's onnxruntime sessions do not spin between operators."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.models import ensure_installed
from tests.support.recognition import SENTENCE_WER, assert_heard
from tests.support.serving import serve_home
from voxtray.inference.recognizers.base import Transcript
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.serve.loader import load_service
from voxtray.serve.service import InferenceService

PAUSED = SPEECH_DIR / "wav" / "ls_1089-134691-0001.wav"  # a pause the VAD cuts at
PAUSED_SAYS = "for a full hour he had paced up and down waiting but he could wait no longer"


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore, tiny_en: InstalledModel
) -> Any:
    ensure_installed(model_store, "silero-vad-v6")
    home = serve_home(tmp_path_factory.mktemp("service"), model_store)
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("VOXTRAY_HOME", str(home))
    args = argparse.Namespace(
        model=tiny_en.name,
        engine="auto",
        provider="cpu",
        precision="int8",
        threads=2,
        language="en",
        gpu_index=0,
        max_queue=4,
        max_audio_s=600,
    )
    served, _ = load_service(args, lambda line: None)
    yield served
    served.close()
    monkeypatch.undo()


def test_segments_a_short_pause_apart_are_one_call(service: InferenceService) -> None:
    if not PAUSED.is_file():
        pytest.skip(f"{PAUSED.name} is not in the evaluation audio")
    audio = read_wav(PAUSED)
    segmenter = service._segmenter
    segmenter.reset()
    pieces = [*segmenter.feed(audio), *segmenter.flush()]
    assert len(pieces) == 2  # what the VAD alone makes of it
    calls: list[int] = []
    recognizer: Any = service.recognizer
    original = recognizer.transcribe

    def counted(samples: Any) -> Transcript:
        calls.append(samples.size)
        transcript: Transcript = original(samples)
        return transcript

    recognizer.transcribe = counted
    try:
        result = service.transcribe(audio)
    finally:
        recognizer.transcribe = original
    assert len(calls) == 1
    assert len(result.segments) == 1
    assert result.segments[0].start_s == pytest.approx(pieces[0].start / 16000, abs=1e-3)
    assert result.segments[0].end_s == pytest.approx(pieces[1].end / 16000, abs=1e-3)
    # Both pieces of the sentence, in one text: either piece lost is a third or more wrong.
    assert_heard(PAUSED_SAYS, result.text, SENTENCE_WER)


def test_server_sessions_do_not_spin(service: InferenceService) -> None:
    recognizer: Any = service.recognizer
    for session in (recognizer._encoder, recognizer._decoder):
        entry = session.get_session_options().get_session_config_entry(
            "session.intra_op.allow_spinning"
        )
        assert entry == "0"
