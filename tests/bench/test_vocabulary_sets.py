"""The vocabulary benchmark's clips (tests/data/vocabulary) and its scoring: listed words
right / wrong, sets split by whether they say a listed entry, and biasing against plain
decoding on the real model."""

from __future__ import annotations

import csv
import json
import wave
from pathlib import Path

import pytest

from tests.support.audio import REPO
from voxtray.bench.vocabulary import ListedWords, listed_words, main
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.text.vocabulary import load_vocabulary

DATA = REPO / "tests" / "data" / "vocabulary"
MANIFEST = DATA / "manifest.tsv"
SPEECH = REPO / "tests" / "data" / "speech" / "manifest.tsv"


def _rows() -> list[dict[str, str]]:
    with MANIFEST.open(encoding="utf-8", newline="") as stream:
        return list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_every_clip_is_16_khz_mono_and_says_its_listed_entries() -> None:
    vocabulary = set(load_vocabulary(str(DATA / "vocabulary.txt")))
    rows = _rows()
    assert len(rows) == 16
    for row in rows:
        with wave.open(str(DATA / row["wav"])) as clip:
            assert (clip.getframerate(), clip.getnchannels(), clip.getsampwidth()) == (16000, 1, 2)
            assert 1.0 < clip.getnframes() / 16000 < 10.0
        entries = row["vocabulary"].split("; ")
        assert set(entries) <= vocabulary, row["id"]
        said = listed_words(entries, row["reference"], "")
        assert said.wrong >= len(entries), row["id"]  # each entry is in the sentence


def test_listed_words_count_each_occurrence_once() -> None:
    entries = ("Hester Prynne", "Abbie", "Voxtray")
    reference = "Hester Prynne and Abbie met Abbie"
    assert listed_words(entries, reference, "hester prynne and abbie met abi") == ListedWords(2, 1)
    assert listed_words(entries, reference, "Abbie Abbie Abbie") == ListedWords(2, 1)
    assert listed_words(entries, "nothing listed here", "Voxtray") == ListedWords(0, 0)


@pytest.mark.slow
def test_biasing_hears_more_listed_words_and_changes_nothing_elsewhere(
    model_store: ModelStore,
    tiny_en: InstalledModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VOXTRAY_HOME", str(model_store.root.parent))
    report = tmp_path / "report.json"
    argv = [
        "--manifest", str(MANIFEST), "--manifest", str(SPEECH),
        "--vocabulary", str(DATA / "vocabulary.txt"), "--uses", "plain,bias",
        "--max-clip-s", "12", "--json", str(report),
    ]  # fmt: skip
    assert main(argv) == 0
    totals = json.loads(report.read_text())["totals"]
    synthetic, named, other = (
        totals["vocabulary: listed"],
        totals["speech: listed"],
        totals["speech: other"],
    )
    for listed in (synthetic, named):
        assert listed["bias"]["listed_right"] > listed["plain"]["listed_right"]
        assert listed["bias"]["wer"] < listed["plain"]["wer"]
    assert other["bias"]["errors"] <= other["plain"]["errors"]
