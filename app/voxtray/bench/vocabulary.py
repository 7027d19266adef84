"""What a vocabulary does to accuracy: WER and the listed words right / wrong, per set,
without it and with each way of using it.

    python -m voxtray.bench.vocabulary --manifest TSV [--manifest TSV ...]
        --vocabulary WORDS [--uses plain,prompt,bias,both] [--bonus 3]
        [--model whisper-tiny.en] [--engine ort] [--json OUT]

A manifest's clips are split into those whose reference says a listed entry ("NAME:
listed") and the rest ("NAME: other"), where the vocabulary may only do harm. Each use
runs one recogniser built from the same model, so the only difference between the
columns is how the vocabulary is used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from voxtray.bench.runner import BenchClip, load_manifest
from voxtray.choices import Engine, Precision, Provider, VocabularyUse
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.models.catalog import load_catalog
from voxtray.models.store import ModelStore
from voxtray.paths import models_dir
from voxtray.scoring.normalizer import normalize_english
from voxtray.scoring.wer import corpus_wer
from voxtray.text.vocabulary import load_vocabulary

PLAIN = "plain"
USES = (PLAIN, *VocabularyUse.values())


@dataclass(frozen=True)
class ListedWords:
    right: int
    wrong: int


def listed_words(vocabulary: Sequence[str], reference: str, text: str) -> ListedWords:
    """How many of the reference's listed entries the text says too (normalised words,
    each occurrence once)."""
    said = normalize_english(reference).split()
    heard = normalize_english(text).split()
    right = wrong = 0
    for entry in vocabulary:
        words = normalize_english(entry).split()
        expected = _occurrences(said, words)
        found = min(expected, _occurrences(heard, words))
        right, wrong = right + found, wrong + expected - found
    return ListedWords(right, wrong)


def _occurrences(words: list[str], phrase: list[str]) -> int:
    n = len(phrase)
    return sum(words[i : i + n] == phrase for i in range(len(words) - n + 1)) if n else 0


def transcripts(
    store: ModelStore, model: str, choice: EngineChoice, clips: list[BenchClip]
) -> dict[str, str]:
    """Each clip's transcript from one recogniser."""
    installed = store.require(model)
    recognizer = create_recognizer(installed, choice)
    return {clip.id: recognizer.transcribe(clip.audio).text for clip in clips}


def clip_sets(
    manifests: list[Path], vocabulary: Sequence[str], max_clip_s: float
) -> dict[str, list[BenchClip]]:
    sets: dict[str, list[BenchClip]] = {}
    for manifest in manifests:
        name = manifest.parent.name
        for clip in load_manifest(manifest, max_clip_s):
            has = listed_words(vocabulary, clip.reference, "").wrong > 0
            sets.setdefault(f"{name}: {'listed' if has else 'other'}", []).append(clip)
    return sets


def decode_times(
    store: ModelStore,
    model: str,
    choices: dict[str, EngineChoice],
    clips: list[BenchClip],
    repeats: int,
) -> dict[str, dict[str, float]]:
    """Each choice's shortest wall-clock and CPU time over all clips, runs interleaved so
    the machine's other work falls on both alike."""
    installed = store.require(model)
    recognizers = {name: create_recognizer(installed, choice) for name, choice in choices.items()}
    best: dict[str, dict[str, float]] = {n: {"wall_s": 1e9, "cpu_s": 1e9} for n in choices}
    for _ in range(repeats):
        for name, recognizer in recognizers.items():
            wall, cpu = time.perf_counter(), time.process_time()
            for clip in clips:
                recognizer.transcribe(clip.audio)
            times = best[name]
            times["wall_s"] = min(times["wall_s"], time.perf_counter() - wall)
            times["cpu_s"] = min(times["cpu_s"], time.process_time() - cpu)
    return best


def _choice(base: EngineChoice, use: str, vocabulary: tuple[str, ...]) -> EngineChoice:
    if use == PLAIN:
        return base
    return replace(base, vocabulary=vocabulary, vocabulary_use=use)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vocabulary_bench")
    parser.add_argument("--manifest", type=Path, action="append", required=True)
    parser.add_argument("--vocabulary", required=True, help="a file or a comma list")
    parser.add_argument("--uses", default=",".join(USES), help="of " + ", ".join(USES))
    parser.add_argument("--bonus", type=float, default=None, help="biasing's bonus per token")
    parser.add_argument("--model", default="whisper-tiny.en")
    parser.add_argument("--engine", default=Engine.ORT, type=Engine)
    parser.add_argument("--precision", default=Precision.INT8, type=Precision)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-clip-s", type=float, default=28.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--timing", type=int, default=0, metavar="REPEATS", help="time plain against bias"
    )
    args = parser.parse_args(argv)
    uses = [use for use in args.uses.split(",") if use]
    if unknown := set(uses) - set(USES):
        parser.error(f"unknown uses {sorted(unknown)}; choose from {', '.join(USES)}")
    vocabulary = load_vocabulary(args.vocabulary)
    store = ModelStore(models_dir(), load_catalog())
    sets = clip_sets(args.manifest, vocabulary, args.max_clip_s)
    clips = [clip for members in sets.values() for clip in members]
    base = EngineChoice(
        engine=args.engine, provider=Provider.CPU, precision=args.precision, threads=args.threads
    )
    if args.bonus is not None:
        base = replace(base, bias_bonus=args.bonus)
    if args.timing:
        choices = {use: _choice(base, use, vocabulary) for use in (PLAIN, VocabularyUse.BIAS)}
        timing = decode_times(store, args.model, choices, clips, args.timing)
        plain, biased = timing[PLAIN], timing[VocabularyUse.BIAS]
        print(f"{len(vocabulary)} entries, {len(clips)} clips, best of {args.timing}:")
        for kind in ("wall_s", "cpu_s"):
            ratio = biased[kind] / plain[kind]
            print(f"  {kind}: plain {plain[kind]:.2f} bias {biased[kind]:.2f} ({ratio:.3f})")
        return 0
    texts = {
        use: transcripts(store, args.model, _choice(base, use, vocabulary), clips) for use in uses
    }
    totals: dict[str, dict[str, dict[str, float]]] = {}
    print(f"{'set':<22}{'clips':>6}{'words':>6}" + "".join(f"{use:>16}" for use in uses))
    for name, members in sets.items():
        totals[name] = {}
        cells = []
        for use in uses:
            result = corpus_wer((clip.reference, texts[use][clip.id]) for clip in members)
            listed = [listed_words(vocabulary, c.reference, texts[use][c.id]) for c in members]
            right, wrong = sum(w.right for w in listed), sum(w.wrong for w in listed)
            totals[name][use] = {
                "wer": result.rate,
                "errors": result.errors,
                "words": result.words,
                "listed_right": right,
                "listed_wrong": wrong,
            }
            cells.append(f"{100 * result.rate:6.2f} % {right:>2}/{right + wrong:<3}")
        words = corpus_wer((c.reference, c.reference) for c in members).words
        print(f"{name:<22}{len(members):>6}{words:>6}" + "".join(f"{c:>16}" for c in cells))
    print("cells: WER, listed words right/listed")
    for clip in clips:
        if len({texts[use][clip.id] for use in uses}) > 1:
            print(f"\n{clip.id}: {clip.reference}")
            for use in uses:
                print(f"  {use:<7} {texts[use][clip.id]}")
    if args.json:
        report = {
            "model": args.model,
            "engine": str(args.engine),
            "bonus": base.bias_bonus,
            "vocabulary": list(vocabulary),
            "totals": totals,
            "texts": texts,
        }
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
