"""The vocabulary: parsing, Whisper's BPE encoder against the reference tokenizer, the
initial prompt on real clips, hotwords in sherpa-onnx's beam search, the CLI flag."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.support.audio import SPEECH_DIR, Clip, read_wav
from tests.support.process import run_voxtray
from tests.support.sherpa_models import HIGH_TONE_HZ, LOW_TONE_HZ, make_nemo_transducer
from voxtray.choices import Engine, Precision, Provider
from voxtray.errors import ExitCode, NotFoundError
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.recognizers.ort_whisper import OrtWhisperRecognizer
from voxtray.inference.recognizers.sherpa import SherpaRecognizer
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.text import vocabulary
from voxtray.text.vocabulary import load_vocabulary, parse_vocabulary, whisper_prompt

HESTER = SPEECH_DIR / "wav" / "ls_triton_1221-135766-0002.wav"
CHOICE = EngineChoice(engine=Engine.ORT, provider=Provider.CPU, precision=Precision.INT8)


# --- parsing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Voxtray, Hester  Prynne ,,", ("Voxtray", "Hester Prynne")),
        ("a;b\nc", ("a", "b", "c")),
        ("Claflin, claflin, CLAFLIN", ("Claflin",)),
        ("# names\nAbbie", ("Abbie",)),
        ("", ()),
    ],
)
def test_parse_vocabulary(value: str, expected: tuple[str, ...]) -> None:
    assert parse_vocabulary(value) == expected


def test_load_vocabulary_from_a_file_or_a_list(tmp_path: Path) -> None:
    listing = tmp_path / "words.txt"
    listing.write_text("Hester Prynne\nClaflin, Abbie\n", encoding="utf-8")
    assert load_vocabulary(str(listing)) == ("Hester Prynne", "Claflin", "Abbie")
    assert load_vocabulary("Voxtray,ONNX") == ("Voxtray", "ONNX")
    with pytest.raises(NotFoundError, match="not found"):
        load_vocabulary(str(tmp_path / "missing.txt"))


def test_whisper_prompt() -> None:
    assert whisper_prompt(("Hester Prynne", "Claflin")) == "Hester Prynne, Claflin."
    assert whisper_prompt(()) == ""


# --- Whisper's BPE ---------------------------------------------------------------------

TRICKY = [
    " Hester Prynne, Claflin, Quilter.",
    " Voxtray's ONNX-runtime (v1.31) isn't 100% naïve: café, 東京, emoji 🎤!",
    "He said: 'don't' -- we'll see   you're  fine\tthere_under",
    " Linnell's pictures are a sort of up-guards-and-at-'em paintings",
]


def _texts(eval_clips: list[Clip]) -> list[str]:
    return TRICKY + [" " + clip.reference for clip in eval_clips]


def test_bpe_matches_the_reference_tokenizer(
    tiny_en: InstalledModel, eval_clips: list[Clip]
) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer.from_file(str(tiny_en.path / "ct2" / "tokenizer.json"))
    files = tiny_en.variant_files("int8")
    recognizer = OrtWhisperRecognizer(files["encoder"], files["decoder"], files["tokens"])
    for text in _texts(eval_clips):
        expected = reference.encode(text, add_special_tokens=False).ids
        assert recognizer.vocab.encoder.encode(text) == expected, text
        assert recognizer.vocab.text(expected) == text


def test_bpe_on_the_multilingual_vocabulary(
    whisper_base: InstalledModel, eval_clips: list[Clip]
) -> None:
    # Whisper's own tokenizer merges by id (rank); the multilingual tokenizer.json lacks
    # some merges (it spells " the" as " " + "the"), so only round trips and well-known
    # ids are checked here.
    files = whisper_base.variant_files("int8")
    vocab = OrtWhisperRecognizer(files["encoder"], files["decoder"], files["tokens"]).vocab
    assert vocab.encoder.encode(" the") == [264]
    assert vocab.encoder.encode(" Hello world") == [2425, 1002]
    for text in _texts(eval_clips):
        tokens = vocab.encoder.encode(text)
        assert vocab.text(tokens) == text
        assert len(tokens) < len(text.encode("utf-8"))  # merged, not bytes


def test_prompt_goes_before_the_start_of_transcript(tiny_en: InstalledModel) -> None:
    files = tiny_en.variant_files("int8")
    plain = OrtWhisperRecognizer(files["encoder"], files["decoder"], files["tokens"])
    vocab = plain.vocab
    prompt = vocab.prompt_tokens("Hester Prynne.")
    assert vocab.sot_prev is not None
    assert prompt[0] == vocab.sot_prev
    assert vocab.text(prompt[1:]) == " Hester Prynne."
    assert vocab.prompt_tokens("  ") == []
    longest = vocab.prompt_tokens("word " * 1000 + "Voxtray")
    assert (
        len(longest) + len(plain._decoding.prompt([], plain.fixed_language)) + vocab.n_text_ctx // 2
        <= vocab.n_text_ctx
    )
    assert vocab.text(longest[1:]).endswith("word word Voxtray")  # the end is kept


# --- real recognition ------------------------------------------------------------------


def test_vocabulary_fixes_a_name_and_keeps_silence_empty(tiny_en: InstalledModel) -> None:
    plain = create_recognizer(tiny_en, CHOICE)
    primed = create_recognizer(tiny_en, replace(CHOICE, vocabulary=("Hester Prynne", "Claflin")))
    audio = read_wav(HESTER)
    assert "Prynne" not in plain.transcribe(audio).text
    assert "Hester Prynne" in primed.transcribe(audio).text
    # Without the echo guard tiny.en says "Claflin." or "Hester Prynne." on this noise.
    rng = np.random.default_rng(1)
    for level in (0.003, 0.01, 0.03):
        noise = (rng.standard_normal(32000) * level).astype(np.float32)
        result = primed.transcribe(noise)
        assert result.text == ""
        assert set(result.guards) & {"prompt-echo", "no-speech"}


# --- sherpa-onnx hotwords --------------------------------------------------------------


def _tone(hz: float) -> np.ndarray:
    t = np.arange(8000) / 16000
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_hotwords_reach_the_transducer_beam_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = make_nemo_transducer(tmp_path / "transducer")
    gap = np.zeros(4000, np.float32)
    low = np.concatenate([gap, _tone(LOW_TONE_HZ), gap])
    both = np.concatenate([gap, _tone(LOW_TONE_HZ), gap, _tone(HIGH_TONE_HZ), gap])
    plain = SherpaRecognizer("nemo-transducer", files)
    assert plain.transcribe(low).text == "hello"
    # "World" is a common word: left out of the hotwords, so plain speech is not bent.
    common = SherpaRecognizer("nemo-transducer", files, hotwords=("World",))
    assert common.common_entries == ("World",)
    assert common.transcribe(low).text == "hello"
    # This fake's only words are common ones; with none counted as common, the fake
    # joiner's weak scores let a hotword bonus make it say the hotword: proof that the
    # phrase (cased, while the tokens are lower case) got to the beam.
    monkeypatch.setattr(vocabulary, "common_words", frozenset)
    biased = SherpaRecognizer("nemo-transducer", files, hotwords=("World",))
    assert "world" in biased.transcribe(low).text
    unknown = SherpaRecognizer("nemo-transducer", files, hotwords=("zebra",))
    assert unknown.transcribe(both).text == "hello world"
    assert not list(tmp_path.glob("**/hotwords.txt"))


# --- command line ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def env(model_store: ModelStore, tiny_en: InstalledModel) -> dict[str, str]:
    environ = {**os.environ, "VOXTRAY_HOME": str(model_store.root.parent)}
    environ.pop("VOXTRAY_CATALOG", None)
    return environ


def test_cli_vocabulary_flag(env: dict[str, str], tmp_path: Path) -> None:
    listing = tmp_path / "names.txt"
    listing.write_text("Hester Prynne\n", encoding="utf-8")
    common = ("transcribe", str(HESTER), "--model", "whisper-tiny.en", "--provider", "cpu")
    result = run_voxtray(*common, "--vocabulary", str(listing), env=env)
    assert result.returncode == 0, result.stderr
    assert "Hester Prynne" in result.stdout
    missing = run_voxtray(*common, "--vocabulary", str(tmp_path / "nope.txt"), env=env)
    assert missing.returncode == ExitCode.NOT_FOUND
    assert missing.stderr.strip().count("\n") == 0
    assert "nope.txt not found" in missing.stderr
