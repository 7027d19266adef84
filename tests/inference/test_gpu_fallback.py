"""A GPU that fails mid-session, injected through the recogniser's session seam on the CPU
(tests/support/gpu_faults.py): the real Whisper model on real onnxruntime sessions that
say they run on CUDA, then run out of memory, hit a CUDA error, lose the card or give NaN
scores. The same audio must come back as text from the CPU, the GPU must not be asked
again for the rest of the session, and the reason must be there to show."""

from __future__ import annotations

import pytest

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.gpu_faults import FAULTS, Fault, faulty_gpu
from voxtray.choices import Provider
from voxtray.gpu import failures
from voxtray.gpu.failures import BrokenOutput, FailureKind, GpuFailure, classify, garbage
from voxtray.inference import gpu_fallback
from voxtray.inference.assembly import load_recognizer
from voxtray.inference.engines import EngineChoice
from voxtray.inference.gpu_fallback import GpuFallbackRecognizer, failed_earlier
from voxtray.inference.recognizers.base import Recognizer
from voxtray.models.store import InstalledModel
from voxtray.scoring.wer import word_errors

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"
SAID = "The birch canoe slid on the smooth planks."
MAX_WER = 0.15
ON_CUDA = EngineChoice(provider=Provider.CUDA)


@pytest.fixture(autouse=True)
def fresh_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test is a session of its own: no provider marked broken by another."""
    monkeypatch.setattr(gpu_fallback, "_BROKEN", {})


def on_faulty_gpu(model: InstalledModel, fault: Fault, heard: list[GpuFailure]) -> Recognizer:
    return load_recognizer(model, ON_CUDA, create=faulty_gpu(fault), on_gpu_failure=heard.append)


@pytest.mark.parametrize("kind", FAULTS)
def test_a_gpu_failing_mid_session_hands_the_same_audio_to_the_cpu(
    tiny_en: InstalledModel, kind: str
) -> None:
    fault = Fault(kind)
    heard: list[GpuFailure] = []
    recognizer = load_recognizer(
        tiny_en, ON_CUDA, create=faulty_gpu(fault), on_gpu_failure=heard.append
    )
    assert isinstance(recognizer, GpuFallbackRecognizer)
    audio = read_wav(CLIP)
    on_gpu = recognizer.transcribe(audio)
    assert on_gpu.provider == "cuda"
    assert word_errors(SAID, on_gpu.text).rate <= MAX_WER, on_gpu.text

    fault.armed = True
    redone = recognizer.transcribe(audio)
    assert redone.provider == "cpu"
    assert word_errors(SAID, redone.text).rate <= MAX_WER, redone.text
    assert [failure.kind for failure in heard] == [FailureKind(kind)]
    assert recognizer.provider == "cpu"
    assert recognizer.fallback is not None
    assert recognizer.fallback.startswith("cuda failed (")
    assert "\n" not in recognizer.fallback

    # Broken for the session: the GPU is not asked again, by this recogniser or a reload.
    runs = fault.runs
    assert word_errors(SAID, recognizer.transcribe(audio).text).rate <= MAX_WER
    assert failed_earlier("cuda", 0) == heard[0]
    reloaded = load_recognizer(tiny_en, ON_CUDA, create=faulty_gpu(fault))
    assert reloaded.provider == "cpu"
    assert word_errors(SAID, reloaded.transcribe(audio).text).rate <= MAX_WER
    assert fault.runs == runs
    assert isinstance(reloaded, GpuFallbackRecognizer)
    assert reloaded.failure == heard[0]


def test_a_gpu_failing_in_the_warm_up_loads_on_the_cpu(tiny_en: InstalledModel) -> None:
    fault = Fault("out-of-memory", armed=True)
    heard: list[GpuFailure] = []
    recognizer = load_recognizer(
        tiny_en, ON_CUDA, create=faulty_gpu(fault), on_gpu_failure=heard.append
    )
    assert recognizer.provider == "cpu"
    assert [failure.kind for failure in heard] == [FailureKind.OUT_OF_MEMORY]
    assert word_errors(SAID, recognizer.transcribe(read_wav(CLIP)).text).rate <= MAX_WER


def test_nan_scores_on_the_cpu_are_an_error_not_text(tiny_en: InstalledModel) -> None:
    """Without a GPU to blame there is no retry, but no "!!!!" typed either."""
    fault = Fault("broken-output", armed=True)
    broken = faulty_gpu(fault)(tiny_en, ON_CUDA)
    with pytest.raises(BrokenOutput, match="not numbers"):
        broken.transcribe(read_wav(CLIP))


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("CUDA failure 2: out of memory ; GPU=0", FailureKind.OUT_OF_MEMORY),
        ("CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED", FailureKind.OUT_OF_MEMORY),
        ("CUDA failure 999: unknown error ; GPU=0", FailureKind.DEVICE_LOST),
        ("GPU has fallen off the bus", FailureKind.DEVICE_LOST),
        ("CUDA error cudaErrorLaunchFailure:unspecified launch failure", FailureKind.DEVICE_LOST),
        ("CUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR", FailureKind.CUDA_ERROR),
        ("something else entirely", FailureKind.OTHER),
    ],
)
def test_failures_are_named(message: str, kind: FailureKind) -> None:
    failure = classify(RuntimeError(message), "cuda")
    assert failure.kind is kind
    assert failure.fix == failures.FIXES[kind]
    assert "\n" not in failure.cause


def test_what_counts_as_garbage() -> None:
    assert garbage("<unk><unk> the") is not None
    assert garbage("!!!!!!!!!!!!") is not None
    assert garbage("Hello, world.") is None
    assert garbage("...") is None  # short: people pause
    assert garbage("语音识别") is None
