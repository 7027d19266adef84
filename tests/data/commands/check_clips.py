"""Checks spoken-command clips (and speech clips) against one recogniser configuration.

    python -m tests.data.commands.check_clips --model whisper-tiny.en --engine ort \\
        --precision int8 [--encoder E.onnx --decoder D.onnx] [--clips DIR] [--speech ID ...]

Run from the repository root. The model comes from the test store (VOXTRAY_TEST_HOME, by
default ~/.cache/voxtray-test); --encoder and --decoder replace that precision's files, to
check weights that are not installed (another quantisation). Each clip goes through voice
detection and the recogniser as `voxtray transcribe` runs it, and gets one JSON line:
what was heard and, for a command clip, why the command did not act (null if it did);
for a speech clip of tests/data/speech, its word error rate. A last line sums it up. To
check a CPU without VNNI or AVX-512 on one that has them, run the same command under
`qemu-x86_64 -cpu Haswell` (about 15 times slower).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from tests.support.audio import clip_path, load_clips
from tests.support.models import suite_home
from tests.support.spoken_commands import (
    COMMANDS_DIR,
    command_problem,
    load_command_clips,
    transcribe_clip,
)
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.pipeline import DictationPipeline
from voxtray.inference.vad import SileroVad
from voxtray.models.catalog import load_catalog
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.scoring.wer import word_errors


def _model(name: str, precision: str, encoder: Path | None, decoder: Path | None) -> InstalledModel:
    store = ModelStore(suite_home() / "models", load_catalog())
    model = store.require(name)
    if encoder is None and decoder is None:
        return model
    files = dict(model.manifest["variants"][precision])
    if encoder is not None:
        files["encoder"] = str(encoder.resolve())  # absolute: the model folder is ignored
    if decoder is not None:
        files["decoder"] = str(decoder.resolve())
    variants = {**model.manifest["variants"], precision: files}
    return replace(model, manifest={**model.manifest, "variants": variants})


def _pipeline(args: argparse.Namespace) -> DictationPipeline:
    model = _model(args.model, args.precision, args.encoder, args.decoder)
    choice = EngineChoice(engine=args.engine, provider="cpu", precision=args.precision)
    recognizer = create_recognizer(model, choice)
    recognizer.warmup()
    store = ModelStore(suite_home() / "models", load_catalog())
    vad = store.require("silero-vad-v6").variant_files("fp32")["model"]
    return DictationPipeline(SileroVad(vad), recognizer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="whisper-tiny.en")
    parser.add_argument("--engine", choices=("ort", "sherpa"), default="ort")
    parser.add_argument("--precision", choices=("fp32", "int8"), default="int8")
    parser.add_argument("--encoder", type=Path)
    parser.add_argument("--decoder", type=Path)
    parser.add_argument("--clips", type=Path, default=COMMANDS_DIR, help="a command manifest")
    parser.add_argument("--only", nargs="*", help="these command clips only (ids)")
    parser.add_argument("--speech", nargs="*", default=[], help="speech clips (ids)")
    parser.add_argument("--label", default="", help="named on every line")
    args = parser.parse_args(argv)
    pipeline = _pipeline(args)
    failed = 0
    clips = [c for c in load_command_clips(args.clips) if not args.only or c.id in args.only]
    for clip in clips:
        heard = transcribe_clip(pipeline, clip.path)
        problem = command_problem(clip, heard)
        failed += problem is not None
        print(
            json.dumps({"label": args.label, "clip": clip.id, "heard": heard, "problem": problem})
        )
    references = {clip.id: clip.reference for clip in load_clips()}
    for clip_id in args.speech:
        heard = transcribe_clip(pipeline, clip_path(clip_id))
        errors = word_errors(references[clip_id], heard)
        print(json.dumps({"label": args.label, "clip": clip_id, "heard": heard,
                          "errors": errors.errors, "words": errors.words}))  # fmt: skip
    print(json.dumps({"label": args.label, "commands": len(clips), "failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
