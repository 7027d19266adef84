"""Contextual biasing: the prefix tree of a vocabulary, the bonus, taking it back, and the
real tiny.en decoder with and without it."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from tests.support.audio import clip_path, load_clips, read_wav
from voxtray.choices import Engine, Precision, Provider
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.recognizers.biasing import (
    DEFAULT_BONUS,
    BiasedChoice,
    VocabularyTrie,
    spellings,
)
from voxtray.inference.recognizers.ort_whisper import OrtWhisperRecognizer, WhisperOptions
from voxtray.models.store import InstalledModel

# A toy tokenizer: one token per letter, a letter after a space one token too (" K").
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
TOKENS = [" ", *LETTERS, *(" " + c for c in LETTERS)]
N_TOKENS = len(TOKENS) + 1
EOT = len(TOKENS)


def ids(text: str) -> list[int]:
    out: list[int] = []
    for index, char in enumerate(text):
        if char != " ":
            spaced = index > 0 and text[index - 1] == " "
            out.append(TOKENS.index(" " + char if spaced else char))
        elif index + 1 == len(text) or text[index + 1] == " ":
            out.append(0)
    return out


encode = ids
FULL = [b"long"] * N_TOKENS  # every token spells enough for the whole start bonus


def trie(*entries: str) -> VocabularyTrie:
    return VocabularyTrie(entries, encode, FULL)


def test_spellings() -> None:
    assert spellings("Hester Prynne") == ["Hester Prynne", "hester prynne"]
    assert spellings("onnx") == ["onnx", "Onnx"]
    assert spellings("ONNX") == ["ONNX", "onnx"]


def test_trie_holds_each_spelling_after_a_space() -> None:
    kai = trie("Kai")
    assert kai.size == 2  # "Kai" and "kai"
    node = kai.root
    for token in ids(" Kai"):
        node = node.children[token]
    assert node.complete
    assert set(kai.root.children) == set(ids(" K k"))
    assert not trie()
    assert not trie("  ")


def _scores(preferred: str, second: str = "", gap: float = 1.0) -> np.ndarray:
    """Scores where `preferred` is the model's choice and `second` trails it by `gap`."""
    scores = np.zeros(N_TOKENS, np.float32)
    scores[ids(preferred) if preferred != "<eot>" else [EOT]] = 5.0
    if second:
        scores[ids(second)] = 5.0 - gap
    return scores


def _step(choice: BiasedChoice, scores: np.ndarray) -> tuple[int, int | None]:
    plain = int(scores.argmax())
    token = choice.choose(scores, plain, 0.0)
    back = choice.finish() if token == EOT else choice.accept(token)
    return token, back


def test_a_bonus_starts_and_continues_an_entry() -> None:
    choice = BiasedChoice(trie("Kai"), 2.0, ids("hi"))
    assert _step(choice, _scores(" C", " K")) == (ids(" K")[0], None)  # the bonus wins
    assert _step(choice, _scores("y", "a")) == (ids("a")[0], None)
    assert _step(choice, _scores("e", "i")) == (ids("i")[0], None)  # "Kai" complete
    # Complete: leaving it is fine, and nothing else gets a bonus.
    assert _step(choice, _scores("<eot>", "s")) == (EOT, None)


def test_an_entry_starts_the_text_after_a_space_as_whisper_does() -> None:
    choice = BiasedChoice(trie("Kai"), 2.0, [])
    assert _step(choice, _scores(" C", " K")) == (ids(" K")[0], None)
    choice = BiasedChoice(trie("Kai"), 2.0, ids("hi"))
    assert _step(choice, _scores("C", "K")) == (ids("C")[0], None)  # not glued to "hi"


def test_nothing_changes_where_no_entry_is_under_way() -> None:
    choice = BiasedChoice(trie("Kai"), 2.0, [])
    for text in "the cat":  # one score table per letter
        scores = np.random.default_rng(ord(text)).standard_normal(N_TOKENS).astype(np.float32)
        scores[ids("K") + ids("k") + ids(" K k")] = -10.0  # far below: no bonus reaches them
        plain = int(scores.argmax())
        assert choice.choose(scores, plain, 0.0) == plain
        assert choice.accept(plain) is None


def test_a_first_token_of_few_letters_gets_a_share_of_the_bonus() -> None:
    letters = [token.encode() for token in TOKENS] + [b""]
    short = VocabularyTrie(["Kai"], encode, letters)
    # " K" spells one letter of four; " k", the lower-case spelling, half of that.
    assert short.start_weights.tolist() == [0.25, 0.125]
    choice = BiasedChoice(short, 2.0, ids("hi"))
    assert _step(choice, _scores(" C", " K", gap=1.0)) == (ids(" C")[0], None)
    choice = BiasedChoice(short, 2.0, ids("hi"))
    assert _step(choice, _scores(" C", " K", gap=0.4)) == (ids(" K")[0], None)


def test_a_bonus_too_small_changes_nothing() -> None:
    choice = BiasedChoice(trie("Kai"), 0.5, ids("hi"))
    assert _step(choice, _scores(" C", " K", gap=1.0)) == (ids(" C")[0], None)


def test_an_unfinished_entry_is_taken_back_to_the_models_own_choice() -> None:
    choice = BiasedChoice(trie("Kai"), 2.0, ids("hi"))
    assert _step(choice, _scores(" C", " K")) == (ids(" K")[0], None)  # position 2
    token = choice.choose(_scores("o"), ids("o")[0], 0.0)
    assert token == ids("o")[0]  # "a" trails too far even with the bonus
    assert choice.accept(token) == 2  # "Ko" leaves "Kai" unfinished
    assert choice.take_back(2) == (ids(" C")[0], 0.0)
    assert choice.taken_back == 1
    # The text goes on from " C"; later positions get the bonus again.
    assert _step(choice, _scores("o")) == (ids("o")[0], None)
    assert _step(choice, _scores(" C", " K")) == (ids(" K")[0], None)


def test_end_of_text_inside_an_entry_is_taken_back() -> None:
    choice = BiasedChoice(trie("Kai"), 2.0, ids("hi"))
    _step(choice, _scores(" C", " K"))
    assert _step(choice, _scores("<eot>")) == (EOT, 2)


def test_an_entry_the_model_chose_itself_is_not_taken_back() -> None:
    choice = BiasedChoice(trie("Kai"), 2.0, ids("hi"))
    _step(choice, _scores(" K"))  # the model's own choice
    assert _step(choice, _scores("e")) == (ids("e")[0], None)


def test_a_longer_entry_left_after_a_complete_one_goes_back_only_to_its_own_start() -> None:
    choice = BiasedChoice(trie("Kai", "Kai Lo"), 2.0, ids("hi"))
    for token in (" K", "a", "i"):
        _step(choice, _scores(token))
    assert _step(choice, _scores(" m", " L")) == (ids(" L")[0], None)  # position 5
    token = choice.choose(_scores("u"), ids("u")[0], 0.0)
    assert choice.accept(token) == 5


def test_a_forced_prefix_counts_as_text() -> None:
    choice = BiasedChoice(trie("Kai"), 2.0, ids(" K"))
    assert _step(choice, _scores("e", "a")) == (ids("a")[0], None)


# --- the real decoder ------------------------------------------------------------------

CHOICE = EngineChoice(engine=Engine.ORT, provider=Provider.CPU, precision=Precision.INT8)
NAMES = ("Hester Prynne", "Claflin", "Abbie")


def _recognizer(model: InstalledModel, options: WhisperOptions) -> OrtWhisperRecognizer:
    files = model.variant_files("int8")
    return OrtWhisperRecognizer(
        files["encoder"], files["decoder"], files["tokens"], options=options
    )


@pytest.mark.slow
def test_biasing_spells_the_names_and_leaves_other_speech(tiny_en: InstalledModel) -> None:
    plain = _recognizer(tiny_en, WhisperOptions())
    biased = _recognizer(tiny_en, WhisperOptions(vocabulary=NAMES, bias_bonus=DEFAULT_BONUS))
    hester = read_wav(clip_path("ls_triton_1221-135766-0002"))
    abbie = read_wav(clip_path("ami_ES2011a_40s-46s"))
    assert "Prynne" not in plain.transcribe(hester).text
    assert "Hester Prynne" in biased.transcribe(hester).text
    assert "Claflin" in biased.transcribe(abbie).text
    for clip_id in ("jfk_inaugural", "timit_ldc93s1", "ls_1089-134686-0000"):
        audio = read_wav(clip_path(clip_id))
        assert biased.transcribe(audio).text == plain.transcribe(audio).text
    noise = (np.random.default_rng(1).standard_normal(32000) * 0.01).astype(np.float32)
    assert biased.transcribe(noise).text == ""


@pytest.mark.slow
def test_the_shipped_choice_biases(tiny_en: InstalledModel) -> None:
    recognizer = create_recognizer(tiny_en, replace(CHOICE, vocabulary=NAMES))
    text = recognizer.transcribe(read_wav(clip_path("ls_triton_1221-135766-0002"))).text
    assert "Hester Prynne" in text


@pytest.mark.slow
@pytest.mark.parametrize("count", [200, 5000])
def test_biasing_runs_on_every_decode_step(
    tiny_en: InstalledModel, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    # The cost itself is a benchmark figure (docs/benchmarks.md, "Vocabulary"): here the
    # time spent in the bias state is counted against the decoding it belongs to, printed,
    # and only checked to be there at all.
    spent = [0.0]
    for name in ("__init__", "choose", "accept", "finish", "take_back"):
        method = getattr(BiasedChoice, name)

        def timed(*args: object, _method: object = method) -> object:
            started = time.perf_counter()
            try:
                return _method(*args)  # type: ignore[operator]
            finally:
                spent[0] += time.perf_counter() - started

        monkeypatch.setattr(BiasedChoice, name, timed)
    entries = tuple(f"Name{i} Surname{i}" for i in range(count - len(NAMES))) + NAMES
    biased = _recognizer(tiny_en, WhisperOptions(vocabulary=entries, bias_bonus=DEFAULT_BONUS))
    decoding = 0.0
    for clip in load_clips():
        if clip.duration_s < 12:
            result = biased.transcribe(read_wav(clip.path))
            decoding += sum(result.timings_ms.values()) / 1000
    assert 0 < spent[0] < decoding, (spent[0], decoding)
    print(f"{count} entries: {100 * spent[0] / decoding:.2f} % of decoding")
