"""No text twice: every clip of tests/data/speech, and pairs of them joined by pauses of
0.3 to 1.5 s (where voice detection splits a dictation and segments meet), through
`voxtray transcribe` and through the tray's dictation pipeline (decode-ahead, live text,
type as you go), with another process loading the CPU. No phrase of four or more words may
come out more often than the reference says it.

Before the fix, whisper-tiny.en on the ort engine typed "And so my fellow Americans. And
so my fellow Americans." for jfk_inaugural and "You can call me Abby. You can call me
Abby." for ami_ES2011a_40s-46s: short segments decoded with 10 s of silence after them
loop, and a guard kept two copies of the loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import wave
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.audio import Clip, read_wav
from tests.support.outputs import TextField, speak
from tests.support.recognition import SENTENCE_WER, heard
from tests.support.sounddevice import FakeSoundDevice
from voxtray.choices import HotkeyMode
from voxtray.config import Settings
from voxtray.dictation.session import Dictation
from voxtray.history.store import History
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.scoring.normalizer import normalize_english

PAUSES_S = (0.3, 0.5, 0.7, 1.0, 1.2, 1.5)
SHORTEST_PHRASE = 4


@dataclass(frozen=True)
class Speech:
    id: str
    audio: NDArray[np.float32]
    reference: str


def repeated_phrases(hypothesis: str, reference: str) -> list[str]:
    """Phrases of `SHORTEST_PHRASE` or more words said more often than the reference says
    them (and more than once)."""
    said, meant = normalize_english(hypothesis).split(), normalize_english(reference).split()
    found = []
    for n in range(SHORTEST_PHRASE, SHORTEST_PHRASE + 5):
        grams = Counter(tuple(said[i : i + n]) for i in range(len(said) - n + 1))
        allowed = Counter(tuple(meant[i : i + n]) for i in range(len(meant) - n + 1))
        found += [" ".join(g) for g, count in grams.items() if count > max(1, allowed[g])]
    return found


def test_the_check_finds_a_repeat_and_allows_one_the_reference_has() -> None:
    twice = "And so my fellow Americans. And so my fellow Americans. Ask not!"
    expected = ["and so my fellow", "so my fellow americans", "and so my fellow americans"]
    assert repeated_phrases(twice, "and so my fellow americans ask not") == expected
    said_twice = "one two three four, one two three four"
    assert repeated_phrases(said_twice, said_twice) == []


def _joined(clips: list[Clip]) -> list[Speech]:
    """Each clip once, in pairs (short with long), joined by a pause."""
    ordered = sorted(clips, key=lambda clip: clip.duration_s)
    half = len(ordered) // 2
    pairs = zip(ordered[:half], reversed(ordered[half:]), strict=False)
    joined = []
    for index, (first, second) in enumerate(pairs):
        pause = np.zeros(int(PAUSES_S[index % len(PAUSES_S)] * 16000), np.float32)
        audio = np.concatenate([read_wav(first.path), pause, read_wav(second.path)])
        joined.append(
            Speech(f"{first.id}+{second.id}", audio, f"{first.reference} {second.reference}")
        )
    return joined


def _write(path: Path, audio: NDArray[np.float32]) -> Path:
    with wave.open(str(path), "wb") as stream:
        stream.setnchannels(1)
        stream.setsampwidth(2)
        stream.setframerate(16000)
        stream.writeframes((np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes())
    return path


@pytest.fixture
def cpu_load() -> Iterator[None]:
    """One process spinning on a core for the length of the test: segments close, and
    decodes finish, later than on an idle machine."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


SAID_TWICE = {
    "ls_1089-134691-0000": 0.1,
    "timit_ldc93s1": 0.5,
    "harvard_sb_example1": 0.3,
    "uberi_one_two_three": 1.0,
}
"""Clips said twice, with the pause between: one segment at 0.1 s, two at the others."""


@pytest.mark.slow
def test_a_phrase_said_twice_is_typed_twice(
    tiny_en: InstalledModel, eval_clips: list[Clip], tmp_path: Path
) -> None:
    """The guards drop only what the audio holds once: a sentence said again after a
    pause is typed again. (Decoded as one, the two segments came out as one sentence, and
    the border guard took that for the truth: one copy was lost.)"""
    clips = {clip.id: clip for clip in eval_clips}
    speech = []
    for clip_id, pause_s in SAID_TWICE.items():
        clip = clips[clip_id]
        audio = read_wav(clip.path)
        pause = np.zeros(int(pause_s * 16000), np.float32)
        twice = np.concatenate([audio, pause, audio])
        speech.append(Speech(f"{clip.id} x2", twice, f"{clip.reference} {clip.reference}"))
    files = [_write(tmp_path / f"{index}.wav", item.audio) for index, item in enumerate(speech)]
    command = [sys.executable, "-m", "voxtray", "transcribe", *map(str, files), "--json"]
    command += ["--model", tiny_en.name, "--engine", "ort", "--precision", "int8"]
    env = {**os.environ, "VOXTRAY_HOME": str(tiny_en.path.parents[1])}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    texts = [json.loads(line)["text"] for line in result.stdout.splitlines()]
    # One copy lost is a word error rate of at least 0.5 against the two.
    lost = {
        item.id: text
        for item, text in zip(speech, texts, strict=True)
        if not heard(item.reference, text, SENTENCE_WER)
    }
    assert not lost, lost


@pytest.mark.slow
@pytest.mark.parametrize(
    ("engine", "precision"), [("ort", "auto"), ("ort", "fp32"), ("sherpa", "auto")]
)
def test_transcribe_says_nothing_twice(
    engine: str,
    precision: str,
    tiny_en: InstalledModel,
    eval_clips: list[Clip],
    tmp_path: Path,
    cpu_load: None,
) -> None:
    speech = [Speech(clip.id, read_wav(clip.path), clip.reference) for clip in eval_clips]
    speech += _joined(eval_clips)
    files = [_write(tmp_path / f"{index}.wav", item.audio) for index, item in enumerate(speech)]
    command = [sys.executable, "-m", "voxtray", "transcribe", *map(str, files), "--json"]
    command += ["--model", tiny_en.name, "--engine", engine, "--precision", precision]
    env = {**os.environ, "VOXTRAY_HOME": str(tiny_en.path.parents[1])}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-2000:]
    texts = [json.loads(line)["text"] for line in result.stdout.splitlines()]
    assert len(texts) == len(speech)
    repeats = {
        item.id: found
        for item, text in zip(speech, texts, strict=True)
        if (found := repeated_phrases(text, item.reference))
    }
    assert not repeats, repeats


@pytest.mark.slow
@pytest.mark.parametrize("type_as_you_go", [False, True], ids=["hold", "type-as-you-go"])
def test_the_tray_pipeline_types_nothing_twice(
    type_as_you_go: bool,
    tiny_en: InstalledModel,
    model_store: ModelStore,
    eval_clips: list[Clip],
    tmp_path: Path,
    cpu_load: None,
) -> None:
    settings = Settings(
        hotkey_mode=HotkeyMode.TOGGLE if type_as_you_go else HotkeyMode.HOLD,
        type_as_you_go=type_as_you_go,
        live_text=True,
    )
    fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=2.0)
    window = TextField()
    dictation = Dictation(
        model_store,
        History(tmp_path / "history.sqlite3"),
        sd_module=fake,
        output_factory=lambda _name: window,
    )
    dictation.load(settings)
    repeats: dict[str, object] = {}
    try:
        for item in _joined(eval_clips):
            window.text = ""
            assert dictation.start()
            end = speak(fake, item.audio)
            fake.streams[-1].wait_for(end, timeout=item.audio.size / 16000 + 30)
            time.sleep(0.3)  # the key comes up a little after the last word
            utterance = dictation.stop()
            assert utterance is not None
            entry = dictation.history.get(utterance.history_id)
            assert entry is not None
            for where, text in (("typed", window.text), ("history", entry.text)):
                if found := repeated_phrases(text, item.reference):
                    repeats[f"{item.id} ({where})"] = (found, text)
    finally:
        dictation.close()
    assert not repeats, repeats
