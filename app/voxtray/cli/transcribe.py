"""`voxtray transcribe FILE...`: audio files to text, one JSON object or transcript per file."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from voxtray.choices import Engine, Precision, Provider, RemoteProtocol, TranscriptFormat
from voxtray.cli.args import (
    add_choice,
    add_model_flag,
    default_threads,
    setting_number,
    thread_count,
)
from voxtray.cli.guard import print_json
from voxtray.cli.models import installer, open_store
from voxtray.paths import printable
from voxtray.text.languages import ENGLISH, WHISPER_LANGUAGES, is_language_setting, language_codes

if TYPE_CHECKING:
    from voxtray.cli.args import Subcommands
    from voxtray.inference.assembly import RemoteWrapper
    from voxtray.inference.pipeline import DictationPipeline, UtteranceRecord


def register(commands: Subcommands) -> None:
    transcribe = commands.add_parser(
        "transcribe",
        help="transcribe audio files (WAV, FLAC, OGG, MP3)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    transcribe.add_argument("files", nargs="+", metavar="FILE")
    add_engine_flags(transcribe)
    transcribe.add_argument(
        "--vocabulary",
        default=None,
        metavar="FILE|WORDS",
        help="words and names to favour: a file (one a line) or a comma list",
    )
    _add_remote_flags(transcribe)
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


def _add_remote_flags(parser: argparse.ArgumentParser) -> None:
    """`--server URL [--api-key KEY] [--remote-model NAME] [--remote-protocol ...]`."""
    from voxtray.inference.remote import API_KEY_ENV
    from voxtray.settings_schema import Key

    parser.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="transcribe on this server (http(s)://HOST:PORT for the OpenAI API, "
        "tcp://HOST:PORT for Wyoming); the local model takes over if it fails",
    )
    parser.add_argument(
        "--api-key", default=None, help=f"the server's API key (default: ${API_KEY_ENV})"
    )
    parser.add_argument("--remote-model", default=None, help="model name to ask the server for")
    parser.add_argument("--remote-protocol", default=None, choices=RemoteProtocol.values())
    parser.add_argument(
        "--remote-timeout-s",
        type=setting_number(Key.REMOTE_TIMEOUT_S),
        default=30.0,
        help="longest wait for the server per request",
    )


def add_engine_flags(parser: argparse.ArgumentParser) -> None:
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
