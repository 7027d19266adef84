"""A vocabulary that never says a word twice or bends plain speech: entries made of common
words are not favoured, copies and entries without a letter are left out, and a biased
decode that says an entry more often than the plain decode heard it gives way to it.

Before: "ten of X" with X an entry came out "10 of X 10 of X"; "the" alone as an entry
took whisper-tiny.en from 10.5 % to 21.2 % WER on tests/data/speech; "..." inserted
"... ..."; a bidi control brought a repeated sentence.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.audio import Clip, read_wav
from voxtray.audio.decode import load_audio
from voxtray.inference.recognizers.bias_guard import EntryCounter, supported
from voxtray.inference.recognizers.ort_whisper import OrtWhisperRecognizer, WhisperOptions
from voxtray.inference.textguards import repeated_words
from voxtray.models.store import InstalledModel
from voxtray.scoring.wer import corpus_wer
from voxtray.text.vocabulary import is_common, parse_vocabulary, review_vocabulary

NAMES = ("Grafana", "Graf", "Terraform", "Terra", "Jenkins", "Proxmox", "Siobhan", "Aoife")
COMMON = ("the", "of", "and", "ten", "times", "night", "cat", "mat", "best", "open")
# Short phrases ending on an entry, entries that are common words, entries that are
# prefixes of one another ("Terra" / "Terraform", "Graf" / "Grafana").
PHRASES = (
    ("en-us", 160, "ten of Grafana"),
    ("en-gb", 150, "call Siobhan"),
    ("en-us", 170, "restart Jenkins"),
    ("en-us", 150, "open Proxmox"),
    ("en-gb-x-rp", 140, "deploy with Terraform"),
    ("en-gb", 160, "ask Aoife"),
    ("en-us", 140, "it was the best of times"),
    ("en-gb-x-rp", 160, "the cat sat on the mat"),
    ("en-us", 180, "ten of Terra"),
)


def test_copies_and_entries_without_letters_are_left_out() -> None:
    zero_width, bidi = "\u200b", "\u202e"
    copies = f"Grafana\ngrafana\nＧｒａｆａｎａ\nGra{zero_width}fana\n{bidi}Grafana\n"
    text = copies + "...\n123\n—\nthe\nThe Cat"
    review = review_vocabulary(text)
    assert review.entries == ("Grafana", "the", "The Cat")
    assert review.duplicates == 4
    assert review.without_letters == 3
    assert review.common == ("the", "The Cat")
    assert parse_vocabulary(text) == review.entries


@pytest.mark.parametrize(
    ("entry", "common"),
    [("the", True), ("Of", True), ("cat sat", True), ("Grafana", False), ("the Grafana", False)],
)
def test_an_entry_of_common_words_only_is_common(entry: str, common: bool) -> None:
    assert is_common(entry) is common


def test_a_biased_text_longer_or_repeating_is_not_supported() -> None:
    counter = EntryCounter(["Kubernetes"])
    plain = "10 of cubanies"
    assert supported(counter, "10 of Kubernetes", plain)
    assert not supported(counter, "10 of Kubernetes 10 of Kubernetes", plain)
    assert not supported(counter, "10 of Kubernetes and then Kubernetes again", plain)
    assert supported(counter, "Kubernetes twice Kubernetes", "Kubernetes twice Kubernetes")
    assert not supported(counter, "Kubernetes Kubernetes", "cuban in his")


def _recognizer(model: InstalledModel, vocabulary: tuple[str, ...]) -> OrtWhisperRecognizer:
    files = model.variant_files("int8")
    options = WhisperOptions(vocabulary=vocabulary)
    return OrtWhisperRecognizer(
        files["encoder"], files["decoder"], files["tokens"], options=options
    )


@pytest.fixture(scope="module")
def phrases(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, NDArray[np.float32]]]:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (packaging/dev.sh installs it)")
    folder = tmp_path_factory.mktemp("phrases")
    spoken = []
    for index, (voice, rate, text) in enumerate(PHRASES):
        wav = folder / f"{index}.wav"
        command = ["espeak-ng", "-v", voice, "-s", str(rate), "-w", str(wav), text]
        subprocess.run(command, check=True, timeout=60)
        spoken.append((text, load_audio(wav)))
    return spoken


@pytest.mark.slow
@pytest.mark.parametrize("vocabulary", [NAMES, NAMES + COMMON], ids=["names", "with-common"])
def test_a_biased_decode_never_says_an_entry_more_than_the_audio_does(
    tiny_en: InstalledModel,
    phrases: list[tuple[str, NDArray[np.float32]]],
    vocabulary: tuple[str, ...],
) -> None:
    plain, biased = _recognizer(tiny_en, ()), _recognizer(tiny_en, vocabulary)
    counter = EntryCounter(vocabulary)
    for said, audio in phrases:
        heard, biased_text = plain.transcribe(audio).text, biased.transcribe(audio).text
        # Said, or heard without the bonus, that often; or once in place of a word the
        # plain decode heard otherwise (what biasing is for, right or wrong: the
        # vocabulary benchmark weighs those). Never more: that is a word said twice.
        allowed = counter.count(said) | counter.count(heard)
        for entry, times in counter.count(biased_text).items():
            assert times <= max(allowed[entry], 1), (said, heard, biased_text)
        assert repeated_words(biased_text) <= repeated_words(said), (said, biased_text)


def _wer(recognizer: OrtWhisperRecognizer, clips: list[Clip]) -> float:
    pairs = [(clip.reference, recognizer.transcribe(read_wav(clip.path)).text) for clip in clips]
    return corpus_wer(pairs).rate


@pytest.mark.slow
def test_common_words_and_odd_entries_leave_plain_speech_alone(
    tiny_en: InstalledModel, eval_clips: list[Clip]
) -> None:
    clips = [clip for clip in eval_clips if clip.duration_s <= 25]
    odd = ("...", "\u202eGrafana", "Grafana", "GRAFANA", "Ｇｒａｆａｎａ")
    baseline = _wer(_recognizer(tiny_en, ()), clips)
    for vocabulary in (("the",), COMMON, parse_vocabulary("\n".join(odd))):
        rate = _wer(_recognizer(tiny_en, vocabulary), clips)
        assert rate <= baseline + 0.005, (vocabulary, rate, baseline)
