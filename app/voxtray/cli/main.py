"""Voxtray's command line.

    voxtray [--window]              start the tray app (installs the default models first)
    voxtray toggle|start|stop|show|quit|status [--json]
    voxtray models list [--json]
    voxtray models install NAME... [--defaults] [--force] [--json]
    voxtray models verify [NAME...] [--json]
    voxtray models remove NAME... [--json]
    voxtray transcribe FILE... [--model NAME] [--engine auto|ort|sherpa]
                       [--provider auto|cpu|cuda|tensorrt] [--vocabulary FILE|WORDS] [--json]
                       [--format txt|srt|vtt|json] [--output-dir DIR]
    voxtray devices [--json]
    voxtray bench --manifest TSV [--engines ort,sherpa] [--peer faster-whisper] [--json OUT]

Messages go to stderr; stdout carries only results (text or JSON). Exit codes are the
`ExitCode` enum in app/voxtray/errors.py, tabled in docs/cli.md.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from voxtray import __version__
from voxtray.choices import Engine, Precision, Provider, TranscriptFormat
from voxtray.cli.args import (
    MAX_GPU_INDEX,
    MAX_RUNS,
    add_choice,
    add_model_flag,
    default_threads,
    int_range,
    thread_count,
)
from voxtray.cli.bench import add_bench_parser
from voxtray.cli.control import CONTROL_COMMANDS, run_control
from voxtray.cli.guard import guarded, print_json
from voxtray.cli.models import add_models_parser, installer, open_store
from voxtray.paths import printable
from voxtray.text.languages import ENGLISH, WHISPER_LANGUAGES, is_language_setting, language_codes

if TYPE_CHECKING:
    from voxtray.inference.assembly import RemoteWrapper
    from voxtray.inference.pipeline import DictationPipeline, UtteranceRecord

    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

Handler = Callable[[argparse.Namespace], int]


def get_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="voxtray",
        description="Push-to-talk dictation with local speech-to-text.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"voxtray {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("run", help="start the app (the default command)")
    run.add_argument("--window", action="store_true", help="a window instead of a tray icon")
    run.set_defaults(handler=_cmd_run)
    for command, text in CONTROL_COMMANDS.items():
        control = commands.add_parser(command, help=text)
        control.add_argument("--json", action="store_true", help="print JSON")
        control.set_defaults(handler=_run_control, control=command)
    add_models_parser(commands)
    _add_transcribe_parser(commands)
    add_bench_parser(commands)
    from voxtray.cli.devices import add_parser as add_devices_parser

    add_devices_parser(commands)
    selftest = commands.add_parser(
        "selftest",
        help="is the GPU really used? checks, CPU vs GPU runs, verdict and fix",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_choice(selftest, "--provider", Provider.AUTO)
    add_model_flag(selftest)
    add_choice(selftest, "--precision", Precision.AUTO)
    selftest.add_argument(
        "--runs", type=int_range(1, MAX_RUNS), default=5, help="warm runs per provider"
    )
    selftest.add_argument(
        "--gpu-index",
        type=int_range(0, MAX_GPU_INDEX),
        default=0,
        help="which NVIDIA card to test (0 = the first)",
    )
    selftest.add_argument("--json", action="store_true", help="print JSON")
    selftest.set_defaults(handler=_cmd_selftest)
    from voxtray.cli.serve import add_serve_parser

    add_serve_parser(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    return args


def _add_engine_flags(parser: argparse.ArgumentParser) -> None:
    add_model_flag(parser)
    add_choice(
        parser,
        "--engine",
        Engine.AUTO,
        "recogniser engine; auto: ort for Whisper, sherpa otherwise",
    )
    add_choice(
        parser,
        "--provider",
        Provider.AUTO,
        "execution provider to ask for; the one that really ran is reported",
    )
    add_choice(
        parser, "--precision", Precision.AUTO, "model variant; auto: int8 on CPU, fp32 on GPU"
    )
    parser.add_argument(
        "--threads",
        type=thread_count(),
        default=default_threads(),
        help="CPU threads for inference",
    )
    parser.add_argument(
        "--language",
        default=ENGLISH,
        type=_language,
        metavar="CODE|auto",
        help="language of multilingual models, or auto to detect it; one of " + language_codes(),
    )


def _language(value: str) -> str:
    code = value.strip().lower()
    if not is_language_setting(code):
        raise argparse.ArgumentTypeError(
            f"unknown language {value!r}; use auto or one of {', '.join(WHISPER_LANGUAGES)}"
        )
    return code


def _add_transcribe_parser(commands: Subcommands) -> None:
    transcribe = commands.add_parser(
        "transcribe",
        help="transcribe audio files (WAV, FLAC, OGG, MP3)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    transcribe.add_argument("files", nargs="+", metavar="FILE")
    _add_engine_flags(transcribe)
    transcribe.add_argument(
        "--vocabulary",
        default=None,
        metavar="FILE|WORDS",
        help="words and names to favour: a file (one a line) or a comma list",
    )
    from voxtray.inference.remote import add_remote_flags

    add_remote_flags(transcribe)
    transcribe.add_argument("--json", action="store_true", help="one JSON object per file per line")
    transcribe.add_argument(
        "--format",
        type=TranscriptFormat,
        choices=list(TranscriptFormat),
        default=None,
        help="transcript format: txt (a line per segment), srt, vtt or json",
    )
    transcribe.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="write DIR/<input name>.<format> per input instead of printing",
    )
    transcribe.set_defaults(handler=_cmd_transcribe)


def main(argv: Sequence[str] | None = None) -> int:
    """The whole command line; `voxtray.entry.main` sends control commands past it."""
    argv = sys.argv[1:] if argv is None else argv

    def run() -> int:
        args = get_args(argv)
        handler: Handler = args.handler
        return handler(args)

    return guarded(run)


# --- run -------------------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    from voxtray.control.server import socket_path
    from voxtray.paths import data_home, writable_folder

    # Settings, history and the control socket are written from the app's threads; a data
    # folder that cannot take them is reported here, naming it, before any window opens.
    writable_folder(data_home(), "the data folder")
    writable_folder(socket_path().parent, "the run folder")
    from voxtray.ui.app import run_app

    return run_app(force_window=args.window)


def _run_control(args: argparse.Namespace) -> int:
    return run_control(args.control, as_json=args.json)


# --- transcribe ------------------------------------------------------------------------


def _cmd_transcribe(args: argparse.Namespace) -> int:
    from voxtray.inference.assembly import build_pipeline
    from voxtray.inference.engines import EngineChoice
    from voxtray.inference.remote import fallback_fields
    from voxtray.text.vocabulary import load_vocabulary
    from voxtray.transcripts.batch import FileOutcome, transcribe_files

    fmt = args.format or TranscriptFormat.TXT
    # A missing file is a NotFoundError (exit 3), not a usage error.
    args.vocabulary = load_vocabulary(args.vocabulary) if args.vocabulary else ()
    store = open_store()

    pipelines: list[DictationPipeline] = []

    def make_pipeline() -> DictationPipeline:
        pipeline = build_pipeline(
            store,
            EngineChoice.of(args),
            model_name=args.model,
            install=installer(store),
            remote=_remote_wrapper(args),
        )
        pipelines.append(pipeline)
        return pipeline

    def emit(outcome: FileOutcome) -> None:
        printed = outcome.written is None
        if args.json or (printed and fmt == TranscriptFormat.JSON):
            row = _transcript_json(printable(str(outcome.path)), outcome.record)
            if pipelines:
                row.update(fallback_fields(pipelines[-1].recognizer))
            if not printed:
                row["output"] = str(outcome.written)
            print_json(row)
        elif printed:
            sys.stdout.write(outcome.text if args.format else outcome.record.text + "\n")
            sys.stdout.flush()

    result = transcribe_files(
        args.files,
        make_pipeline,
        result_json=_transcript_json,
        fmt=fmt,
        output_dir=args.output_dir,
        emit=emit,
        stderr=sys.stderr,
    )
    return int(result.exit_code)


def _remote_wrapper(args: argparse.Namespace) -> RemoteWrapper | None:
    """With `--server`: the remote engine, the local model taking over if it fails."""
    if not args.server:
        return None
    from voxtray.inference.remote import remote_with_fallback

    return functools.partial(remote_with_fallback, args)


def _transcript_json(name: str, record: UtteranceRecord) -> dict[str, object]:
    timings = {"vad": record.vad_ms, "stt": record.stt_ms, **record.stage_totals_ms()}
    return {
        "file": name,
        "text": record.text,
        "model": record.model,
        "engine": record.engine,
        "provider": record.provider,
        "language": record.language,
        "duration_s": round(record.audio_s, 3),
        "timings_ms": {stage: round(ms, 2) for stage, ms in timings.items()},
        "segments": [
            {
                "start_s": s.start_s,
                "end_s": s.end_s,
                "text": s.text,
                "stt_ms": round(s.stt_ms, 2),
                "guards": s.guards,
                "language": s.language,
            }
            for s in record.segments
        ],
    }


# --- selftest --------------------------------------------------------------------------


def _cmd_selftest(args: argparse.Namespace) -> int:
    from voxtray.gpu.selftest import run_selftest
    from voxtray.inference.assembly import ensure_installed

    store = open_store()
    name = args.model or store.catalog.default_stt
    model = ensure_installed(store, name, install=installer(store))
    report = run_selftest(
        model,
        args.provider,
        precision=args.precision,
        runs=args.runs,
        gpu_index=args.gpu_index,
        progress=lambda message: print(f"selftest: {message}", file=sys.stderr),
    )
    if args.json:
        print_json(report.to_json())
    else:
        print(report.text_report())
    return int(report.exit_code)
