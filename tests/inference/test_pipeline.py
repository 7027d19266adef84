"""The streaming pipeline: segments recognised while audio still arrives, in order, with
one timing record per utterance."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.models import ensure_installed
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.waiting import wait_for
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.pipeline import DictationPipeline, chunked, paced
from voxtray.inference.recognizers.base import Transcript, warmup_audio
from voxtray.inference.vad import SileroVad, VadOptions
from voxtray.models.store import InstalledModel, ModelStore

WAIT = "he could wait no longer"  # ls_1089-134691-0000


@pytest.fixture(scope="module")
def vad_path(model_store: ModelStore) -> object:
    return ensure_installed(model_store, "silero-vad-v6").variant_files("fp32")["model"]


class RecordingRecognizer:
    """Wraps a real recogniser and notes when each segment started recognising."""

    engine = "ort"
    model = "recording"

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.calls: list[tuple[float, int]] = []
        self.done = 0
        self.thread_names: list[str] = []

    @property
    def provider(self) -> str:
        return "cpu"

    def warmup(self) -> None:
        pass

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        self.calls.append((time.perf_counter(), audio.size))
        self.thread_names.append(threading.current_thread().name)
        transcript: Transcript = self.inner.transcribe(audio)  # type: ignore[attr-defined]
        self.done += 1
        return transcript


def test_streaming_recognises_segments_while_audio_arrives(
    tiny_en: InstalledModel, vad_path: object
) -> None:
    first = read_wav(SPEECH_DIR / "wav" / "harvard_sb_example1.wav")
    second = read_wav(SPEECH_DIR / "wav" / "ls_1089-134691-0000.wav")
    gap = np.zeros(16000 * 2, np.float32)
    audio = np.concatenate([first, gap, second, gap[:8000]])
    inner = create_recognizer(tiny_en, EngineChoice(engine="ort", provider="cpu"))
    recorder = RecordingRecognizer(inner)
    pipeline = DictationPipeline(SileroVad(vad_path), recorder)  # type: ignore[arg-type]
    began = time.perf_counter()
    record = pipeline.transcribe(paced(chunked(audio, 1600), speed=4.0))
    # The first segment started recognising long before the stream ended.
    stream_end = began + audio.size / 16000 / 4.0
    assert recorder.calls[0][0] < stream_end - 0.3
    assert recorder.thread_names[0] == "voxtray-stt"
    assert len(record.segments) == 2
    assert_heard(BIRCH, record.segments[0].text, SENTENCE_WER)
    assert_heard(WAIT, record.segments[1].text, SENTENCE_WER)
    assert record.text.count(".") >= 1
    assert record.segments[0].end_s <= record.segments[1].start_s
    assert record.audio_s == pytest.approx(audio.size / 16000)
    assert record.vad_ms > 0
    assert record.stt_ms > 0
    assert record.release_to_text_ms < record.stt_ms
    assert (record.engine, record.model, record.provider) == ("ort", "recording", "cpu")
    assert set(record.stage_totals_ms()) == {"features", "encoder", "decoder"}


def test_a_pause_is_decoded_ahead_so_the_release_finds_the_text(
    tiny_en: InstalledModel, vad_path: object
) -> None:
    clip = read_wav(SPEECH_DIR / "wav" / "harvard_sb_example1.wav")
    inner = create_recognizer(tiny_en, EngineChoice(engine="ort", provider="cpu"))
    recorder = RecordingRecognizer(inner)
    pipeline = DictationPipeline(SileroVad(vad_path), recorder)  # type: ignore[arg-type]
    pipeline.start()
    for chunk in chunked(np.concatenate([clip, np.zeros(2400, np.float32)]), 512):
        pipeline.feed(chunk)
    assert pipeline.speaker_paused()  # a pause short of the VAD's 400 ms
    assert pipeline.segmenter.speech_active
    wait_for(lambda: recorder.done == 1)
    record = pipeline.finish()
    assert len(recorder.calls) == 1  # the release decoded nothing more
    assert_heard(BIRCH, record.text, SENTENCE_WER)
    assert record.stt_ms > 0
    assert record.release_to_text_ms < record.stt_ms


def test_a_guess_outlives_a_short_min_silence_until_the_pad_closes_the_segment(
    tiny_en: InstalledModel, vad_path: object
) -> None:
    clip = read_wav(SPEECH_DIR / "wav" / "harvard_sb_example1.wav")
    recorder = RecordingRecognizer(create_recognizer(tiny_en, EngineChoice(engine="ort")))
    options = VadOptions(min_silence_ms=200)  # speech ends before its 300 ms pad is in
    pipeline = DictationPipeline(SileroVad(vad_path), recorder, options)  # type: ignore[arg-type]
    pipeline.start()
    for chunk in chunked(np.concatenate([clip, np.zeros(2400, np.float32)]), 512):
        pipeline.feed(chunk)
    wait_for(lambda: recorder.done == 1)
    for chunk in chunked(np.zeros(16000, np.float32), 512):
        pipeline.feed(chunk)
    record = pipeline.finish()
    assert len(recorder.calls) == 1  # the guess served the segment the VAD closed
    assert_heard(BIRCH, record.text, SENTENCE_WER)


def test_files_are_not_decoded_ahead(tiny_en: InstalledModel, vad_path: object) -> None:
    clip = read_wav(SPEECH_DIR / "wav" / "harvard_sb_example1.wav")
    recorder = RecordingRecognizer(create_recognizer(tiny_en, EngineChoice(engine="ort")))
    pipeline = DictationPipeline(SileroVad(vad_path), recorder)  # type: ignore[arg-type]
    audio = np.concatenate([clip, np.zeros(16000, np.float32)])
    record = pipeline.transcribe(chunked(audio), decode_ahead=False)
    [segment] = record.segments
    # One decode, of exactly the segment the VAD closed (a guess would be shorter).
    assert [size for _, size in recorder.calls] == [
        round((segment.end_s - segment.start_s) * 16000)
    ]


def _trimmed(audio: NDArray[np.float32]) -> NDArray[np.float32]:
    """The clip from 30 ms before its first loud sample to 30 ms after its last."""
    loud = np.nonzero(np.abs(audio) > 0.02)[0]
    return audio[max(loud[0] - 480, 0) : loud[-1] + 480]


def test_speech_after_a_pause_cancels_the_guess(tiny_en: InstalledModel, vad_path: object) -> None:
    first = _trimmed(read_wav(SPEECH_DIR / "wav" / "harvard_sb_example1.wav"))
    second = _trimmed(read_wav(SPEECH_DIR / "wav" / "ls_1089-134691-0000.wav"))
    pause = np.zeros(4000, np.float32)  # 250 ms: a pause, not the end of the segment
    inner = create_recognizer(tiny_en, EngineChoice(engine="ort", provider="cpu"))
    recorder = RecordingRecognizer(inner)
    pipeline = DictationPipeline(SileroVad(vad_path), recorder)  # type: ignore[arg-type]
    pipeline.start()
    for chunk in chunked(np.concatenate([first, pause]), 512):
        pipeline.feed(chunk)
    wait_for(lambda: len(recorder.calls) == 1)
    for chunk in chunked(np.concatenate([second, np.zeros(16000, np.float32)]), 512):
        pipeline.feed(chunk)
    record = pipeline.finish()
    # One segment over both sentences: the first pause's guess was decoded, then dropped.
    assert len(record.segments) == 1
    assert recorder.calls[0][1] < first.size + pause.size
    assert max(size for _, size in recorder.calls) > first.size + pause.size + second.size // 2
    # Both sentences in order: one of them lost, or the two swapped, is over a third wrong.
    assert_heard(f"{BIRCH} {WAIT}", record.text, SENTENCE_WER)


def test_silence_only_gives_an_empty_record(tiny_en: InstalledModel, vad_path: object) -> None:
    recognizer = create_recognizer(tiny_en, EngineChoice(engine="sherpa"))
    pipeline = DictationPipeline(SileroVad(vad_path), recognizer)
    record = pipeline.transcribe(chunked(np.zeros(16000 * 3, np.float32)))
    assert record.text == ""
    assert record.segments == []


def test_errors_in_recognition_reach_the_caller(vad_path: object) -> None:
    class Broken(RecordingRecognizer):
        def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
            raise RuntimeError("model exploded")

    pipeline = DictationPipeline(SileroVad(vad_path), Broken(None))  # type: ignore[arg-type]
    clip = read_wav(SPEECH_DIR / "wav" / "harvard_sb_example1.wav")
    with pytest.raises(RuntimeError, match="model exploded"):
        pipeline.transcribe(chunked(clip))
    # The pipeline is usable again afterwards.
    pipeline.start()
    pipeline._abandon()


def test_feed_before_start_is_refused(vad_path: object) -> None:
    pipeline = DictationPipeline(SileroVad(vad_path), RecordingRecognizer(None))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        pipeline.feed(np.zeros(10, np.float32))


class ReleasingRecognizer(RecordingRecognizer):
    """Also notes when it is asked to hand its memory back."""

    def __init__(self, inner: object) -> None:
        super().__init__(inner)
        self.released = 0

    def release_idle_memory(self) -> bool:
        self.released += 1
        return bool(self.inner.release_idle_memory())  # type: ignore[attr-defined]


def test_after_an_idle_release_the_next_utterance_refills_first(
    tiny_en: InstalledModel, vad_path: object
) -> None:
    recognizer = ReleasingRecognizer(create_recognizer(tiny_en, EngineChoice(engine="ort")))
    pipeline = DictationPipeline(SileroVad(vad_path), recognizer)  # type: ignore[arg-type]
    clip = read_wav(SPEECH_DIR / "wav" / "harvard_sb_example1.wav")
    pipeline.release_idle_memory()
    assert recognizer.released == 1
    pipeline.start()
    wait_for(lambda: recognizer.done == 1)  # the refill, before any speech
    warmup_size = warmup_audio().size
    assert recognizer.calls[0][1] == warmup_size
    assert recognizer.thread_names[0] == "voxtray-stt"
    for chunk in chunked(clip, 512):
        pipeline.feed(chunk)
    refilled = pipeline.finish()
    recognizer.calls.clear()
    again = pipeline.transcribe(chunked(clip, 512))
    assert warmup_size not in [size for _, size in recognizer.calls]  # only once
    assert refilled.text == again.text
    assert_heard(BIRCH, again.text, SENTENCE_WER)


def test_no_refill_where_nothing_was_handed_back(vad_path: object) -> None:
    class Remote:  # a recogniser without memory of its own to hand back
        engine, model, provider = "remote", "far", "remote:cpu"
        calls = 0

        def warmup(self) -> None:
            pass

        def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
            Remote.calls += 1
            return Transcript("", [], {}, "remote:cpu", None, [])

    pipeline = DictationPipeline(SileroVad(vad_path), Remote())
    pipeline.release_idle_memory()
    pipeline.start()
    pipeline.feed(np.zeros(512, np.float32))
    pipeline.finish()
    assert Remote.calls == 0  # no warm-up request went to the server
