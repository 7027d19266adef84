"""What a vocabulary does to accuracy: WER per clip and overall, without and with it.

    python -m voxtray.bench.vocabulary --manifest TSV --vocabulary WORDS
        [--vocabulary-unrelated WORDS] [--model whisper-tiny.en] [--engine ort] [--json OUT]

Each run of the eval set is made with one recogniser built from the same model, so the
only difference between the columns is the vocabulary.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from voxtray.bench.runner import BenchClip, load_manifest
from voxtray.bench.wer import corpus_wer, word_errors
from voxtray.choices import Engine, Precision, Provider
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.models.catalog import load_catalog
from voxtray.models.store import ModelStore
from voxtray.paths import models_dir
from voxtray.text.vocabulary import load_vocabulary


def transcripts(
    store: ModelStore, model: str, choice: EngineChoice, clips: list[BenchClip]
) -> dict[str, str]:
    """Each clip's transcript from one recogniser."""
    installed = store.require(model)
    recognizer = create_recognizer(installed, choice)
    return {clip.id: recognizer.transcribe(clip.audio).text for clip in clips}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vocabulary_bench")
    parser.add_argument("--manifest", type=Path, required=True)
    parser.add_argument("--vocabulary", required=True, help="a file or a comma list")
    parser.add_argument("--vocabulary-unrelated", default="", help="words in no clip")
    parser.add_argument("--model", default="whisper-tiny.en")
    parser.add_argument("--engine", default=Engine.ORT, type=Engine)
    parser.add_argument("--precision", default=Precision.INT8, type=Precision)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-clip-s", type=float, default=28.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    store = ModelStore(models_dir(), load_catalog())
    clips = load_manifest(args.manifest, args.max_clip_s)
    base = EngineChoice(
        engine=args.engine, provider=Provider.CPU, precision=args.precision, threads=args.threads
    )
    runs = {"none": base, "related": replace(base, vocabulary=load_vocabulary(args.vocabulary))}
    if args.vocabulary_unrelated:
        unrelated = load_vocabulary(args.vocabulary_unrelated)
        runs["unrelated"] = replace(base, vocabulary=unrelated)
    texts = {name: transcripts(store, args.model, choice, clips) for name, choice in runs.items()}
    report: dict[str, object] = {
        "model": args.model,
        "engine": str(args.engine),
        "vocabulary": {name: list(choice.vocabulary) for name, choice in runs.items()},
        "clips": len(clips),
    }
    print(f"{'clip':<32}" + "".join(f"{name:>11}" for name in runs))
    for clip in clips:
        errors = [word_errors(clip.reference, texts[name][clip.id]) for name in runs]
        if len({e.errors for e in errors}) > 1:
            print(f"{clip.id:<32}" + "".join(f"{e.errors:>4}/{e.words:<6}" for e in errors))
    totals = {}
    for name in runs:
        result = corpus_wer((clip.reference, texts[name][clip.id]) for clip in clips)
        totals[name] = {"wer": result.rate, "errors": result.errors, "words": result.words}
        print(f"{name:<10} WER {100 * result.rate:.2f} % ({result.errors}/{result.words})")
    report["totals"] = totals
    report["texts"] = texts
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
