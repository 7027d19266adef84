"""sherpa-onnx runs the converted models, as accurately as faster-whisper on the same
weights (BRIEF section 7: clips up to 25 s, beam 1, English, 2 threads, int8)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.audio import Clip, read_wav
from voxtray.inference.recognizers.sherpa import WHISPER_TAIL_PADDING_FRAMES
from voxtray.models.store import InstalledModel
from voxtray.scoring.wer import corpus_wer

sherpa_onnx = pytest.importorskip("sherpa_onnx")

MAX_CLIP_S = 25.0
WER_MARGIN = 0.02


def _clips(eval_clips: list[Clip]) -> list[tuple[Clip, NDArray[np.float32]]]:
    chosen = [(clip, read_wav(clip.path)) for clip in eval_clips if clip.duration_s <= MAX_CLIP_S]
    # 8 kHz originals are stored resampled at 16 kHz in the eval set; all clips are 16 kHz.
    assert len(chosen) >= 15
    return chosen


def _sherpa_texts(
    model: InstalledModel, clips: list[tuple[Clip, NDArray[np.float32]]]
) -> list[str]:
    files = model.variant_files("int8")
    recognizer = sherpa_onnx.OfflineRecognizer.from_whisper(
        encoder=str(files["encoder"]),
        decoder=str(files["decoder"]),
        tokens=str(files["tokens"]),
        language="en" if model.manifest["name"] == "whisper-base" else "",
        task="transcribe",
        num_threads=2,
        tail_paddings=WHISPER_TAIL_PADDING_FRAMES,
    )
    texts = []
    for _, audio in clips:
        stream = recognizer.create_stream()
        stream.accept_waveform(16000, audio)
        recognizer.decode_stream(stream)
        texts.append(stream.result.text)
    return texts


def _faster_whisper_texts(
    model: InstalledModel, clips: list[tuple[Clip, NDArray[np.float32]]]
) -> list[str]:
    faster_whisper = pytest.importorskip("faster_whisper")
    peer = faster_whisper.WhisperModel(
        str(model.path / "ct2"), device="cpu", compute_type="int8", cpu_threads=2
    )
    texts = []
    for _, audio in clips:
        segments, _ = peer.transcribe(audio, beam_size=1, language="en", vad_filter=False)
        texts.append(" ".join(segment.text.strip() for segment in segments))
    return texts


@pytest.mark.slow
@pytest.mark.parametrize("model_fixture", ["tiny_en", "whisper_base"])
def test_sherpa_wer_within_two_points_of_faster_whisper(
    model_fixture: str, request: pytest.FixtureRequest, eval_clips: list[Clip]
) -> None:
    model: InstalledModel = request.getfixturevalue(model_fixture)
    clips = _clips(eval_clips)
    references = [clip.reference for clip, _ in clips]
    ours = corpus_wer(zip(references, _sherpa_texts(model, clips), strict=True))
    peer = corpus_wer(zip(references, _faster_whisper_texts(model, clips), strict=True))
    print(
        f"\n{model.name}: sherpa-onnx WER {ours.rate:.2%} vs faster-whisper {peer.rate:.2%} "
        f"over {len(clips)} clips",
        file=sys.stderr,
    )
    assert ours.words == peer.words > 300
    assert ours.rate <= peer.rate + WER_MARGIN
