"""Both engines over the same converted Whisper files: real clips against their references,
the quality guards, and what they report about themselves."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.support.audio import REPO, SPEECH_DIR, read_wav
from tests.support.recognition import SENTENCE_WER, assert_heard
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.recognizers.base import Recognizer, release_idle_memory
from voxtray.inference.recognizers.logits import runaway_tail as _runaway_tail
from voxtray.inference.textguards import clean_transcript, collapse_repetition, is_silent
from voxtray.memory import release_free_memory
from voxtray.models.store import InstalledModel

REFERENCES = {
    "harvard_sb_example1": "the birch canoe slid on the smooth planks",
    "ls_1089-134691-0000": "he could wait no longer",
    "ls_1089-134691-0001": "for a full hour he had paced up and down waiting "
    "but he could wait no longer",
    "jfk_inaugural": "and so my fellow americans ask not what your country can do for you "
    "ask what you can do for your country",
}


@pytest.fixture(scope="module", params=["ort", "sherpa"])
def recognizer(request: pytest.FixtureRequest, tiny_en: InstalledModel) -> Recognizer:
    engine = create_recognizer(tiny_en, EngineChoice(engine=request.param, provider="cpu"))
    engine.warmup()
    return engine


@pytest.mark.parametrize("clip", sorted(REFERENCES))
def test_real_clip_text(recognizer: Recognizer, clip: str) -> None:
    result = recognizer.transcribe(read_wav(SPEECH_DIR / "wav" / f"{clip}.wav"))
    assert_heard(REFERENCES[clip], result.text, SENTENCE_WER)
    assert result.provider == "cpu"
    assert sum(result.timings_ms.values()) > 0


def test_ort_reports_stage_timings_and_tokens(tiny_en: InstalledModel) -> None:
    ort = create_recognizer(tiny_en, EngineChoice(engine="ort", provider="cpu"))
    result = ort.transcribe(read_wav(SPEECH_DIR / "wav" / "harvard_sb_example1.wav"))
    assert set(result.timings_ms) == {"features", "encoder", "decoder"}
    assert all(ms > 0 for ms in result.timings_ms.values())
    assert result.tokens
    assert max(result.tokens) < 50256
    assert result.no_speech_prob is not None
    assert result.no_speech_prob < 0.2


@pytest.mark.parametrize("noise", ["silence", "white", "hum"])
def test_silence_and_noise_give_empty_text(recognizer: Recognizer, noise: str) -> None:
    n = 10 * 16000
    rng = np.random.default_rng(0)
    audio = {
        "silence": np.zeros(n),
        "white": rng.standard_normal(n) * 0.1,
        "hum": 0.2 * np.sin(2 * np.pi * 50 * np.arange(n) / 16000),
    }[noise].astype(np.float32)
    assert recognizer.transcribe(audio).text == ""


def test_ort_engine_uses_the_provider_it_was_given(tiny_en: InstalledModel) -> None:
    # No GPU here: CUDA asked of onnxruntime falls back, and the report says so.
    ort = create_recognizer(tiny_en, EngineChoice(engine="ort", provider="cuda", precision="int8"))
    assert ort.provider == "cpu"


def test_sherpa_from_pypi_reports_cpu_even_when_cuda_is_asked(tiny_en: InstalledModel) -> None:
    sherpa = create_recognizer(tiny_en, EngineChoice(engine="sherpa", provider="cuda"))
    assert sherpa.provider == "cpu"


def test_repetition_guards() -> None:
    assert collapse_repetition("5, 5, 5, 5, 5") == ("5, 5", True)
    assert collapse_repetition("no, no, I said no") == ("no, no, I said no", False)
    assert collapse_repetition("Thank you. Thank you. Thank you. Thank you.") == (
        "Thank you. Thank you.",
        True,
    )
    assert _runaway_tail([1, 2, 1, 2, 1, 2, 1, 2]) == 2
    assert _runaway_tail([1, 2, 1, 2, 1, 2]) is None
    assert _runaway_tail([7, 7, 7, 7]) == 1


def test_annotations_are_never_typed() -> None:
    assert clean_transcript("[BLANK_AUDIO]") == ("", ["annotation"])
    assert clean_transcript("Hello (water running) world ♪") == ("Hello world", ["annotation"])
    assert clean_transcript("plain text") == ("plain text", [])


def test_silence_gate() -> None:
    assert is_silent(np.zeros(100, np.float32))
    assert is_silent(np.full(100, 1e-4, np.float32))
    assert not is_silent(np.full(100, 0.01, np.float32))


def _anon_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    pytest.skip("no RssAnon in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_ort_hands_its_arenas_back_when_idle_and_transcribes_the_same(
    tiny_en: InstalledModel,
) -> None:
    ort = create_recognizer(tiny_en, EngineChoice(engine="ort", provider="cpu"))
    ort.warmup()
    long_clip = read_wav(SPEECH_DIR / "wav" / "ls_1089-134686-0000.wav")  # 10.4 s
    first = ort.transcribe(long_clip).text
    release_free_memory()  # what a trim alone gives back is not the arenas
    busy = _anon_mb()
    release_idle_memory(ort)
    rested = _anon_mb()
    # The arenas sized for a 10 s input hold ~35 MB (docs/reliability.md, "Memory").
    assert busy - rested > 15, (busy, rested)
    assert ort.transcribe(long_clip).text == first


_FREED_BLOCKS_STAY = """
import sys
import numpy as np
from voxtray.memory import return_large_blocks
if sys.argv[1] == "set":
    assert return_large_blocks()
def anon():
    line = next(l for l in open("/proc/self/status") if l.startswith("RssAnon:"))
    return int(line.split()[1]) / 1024
big = np.ones(5_000_000, np.float32)
del big  # a 20 MB block freed: glibc raises its threshold for a mapping of its own
before = anon()
blocks, pins = [], []
for _ in range(8):
    blocks.append(np.ones(2_500_000, np.float32))  # 10 MB each
    pins.append(np.ones(1000))  # a small block after each one, still in use
del blocks
print(anon() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_large_blocks_go_back_to_the_system() -> None:
    def kept_mb(mode: str) -> float:
        # In a child: the setting holds for the life of a process.
        result = subprocess.run(
            [sys.executable, "-c", _FREED_BLOCKS_STAY, mode],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        return float(result.stdout)

    assert kept_mb("default") > 40  # what the setting is for
    assert kept_mb("set") < 8
