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
`ExitCode` enum in app/errors.py, tabled in docs/cli.md.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from app import __version__
from app.choices import Choice, Engine, Precision, Provider, TranscriptFormat
from app.cli_args import (
    MAX_GPU_INDEX,
    MAX_RUNS,
    default_threads,
    int_range,
    model_name,
    positive_seconds,
    thread_count,
)
from app.errors import BadInputError, ExitCode, VoxtrayError, disk_error
from app.paths import printable

if TYPE_CHECKING:
    from app.benchmark import MatrixCell
    from app.inference.assembly import Installer, RemoteWrapper
    from app.inference.pipeline import DictationPipeline, UtteranceRecord
    from app.models.store import InstalledModel, ModelStore

    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

Handler = Callable[[argparse.Namespace], int]
C = TypeVar("C", bound=Choice)


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
    for command, text in (
        ("toggle", "start or stop dictation in the running app"),
        ("start", "start dictation in the running app (push-to-talk pressed)"),
        ("stop", "stop dictation in the running app (released); the text is typed"),
        ("show", "bring the running app forward"),
        ("quit", "quit the running app"),
        ("status", "the running app's state and last utterance"),
    ):
        control = commands.add_parser(command, help=text)
        control.add_argument("--json", action="store_true", help="print JSON")
        control.set_defaults(handler=_cmd_control, control=command)
    _add_models_parser(commands)
    _add_transcribe_parser(commands)
    _add_bench_parser(commands)
    from app.devices import add_parser as add_devices_parser

    add_devices_parser(commands)
    selftest = commands.add_parser(
        "selftest",
        help="is the GPU really used? checks, CPU vs GPU runs, verdict and fix",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    _add_choice(selftest, "--provider", Provider.AUTO)
    _add_model_flag(selftest)
    _add_choice(selftest, "--precision", Precision.AUTO)
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
    from app.serve.cli import add_serve_parser

    add_serve_parser(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    return args


def _add_model_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default=None, type=model_name, help="catalog name (default: the default model)"
    )


def _parse_choice(kind: type[C]) -> Callable[[str], C]:
    """An argparse `type=` that gives the member, with argparse's own invalid-choice words."""

    def parse(value: str) -> C:
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(repr(v) for v in kind.values())
            raise argparse.ArgumentTypeError(
                f"invalid choice: {value!r} (choose from {allowed})"
            ) from None

    return parse


def _parse_choices(kind: type[C]) -> Callable[[str], list[C]]:
    """An argparse `type=` for a comma-separated list of members (empty items skipped)."""
    parse_one = _parse_choice(kind)

    def parse(value: str) -> list[C]:
        chosen = [parse_one(item) for item in value.split(",") if item]
        if not chosen:
            allowed = ", ".join(repr(v) for v in kind.values())
            raise argparse.ArgumentTypeError(f"name at least one (choose from {allowed})")
        return chosen

    return parse


def _add_choice(
    parser: argparse.ArgumentParser, flag: str, default: Choice, help: str | None = None
) -> None:
    kind = type(default)
    parser.add_argument(
        flag, default=default, type=_parse_choice(kind), choices=kind.values(), help=help
    )


def _add_models_parser(commands: Subcommands) -> None:
    models = commands.add_parser("models", help="list, install, verify and remove models")
    actions = models.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="the catalog, with what is installed")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_cmd_models_list)

    install = actions.add_parser("install", help="fetch, convert and verify models")
    install.add_argument("names", nargs="*", metavar="NAME")
    install.add_argument("--defaults", action="store_true", help="the default VAD and STT models")
    install.add_argument("--force", action="store_true", help="reinstall even if installed")
    install.add_argument(
        "--allow-unpinned",
        action="store_true",
        help="accept a download the catalog pins no sha256 for (its hash is recorded)",
    )
    install.add_argument("--json", action="store_true", help="print JSON")
    install.set_defaults(handler=_cmd_models_install)

    verify = actions.add_parser("verify", help="check installed files against their sha256")
    verify.add_argument("names", nargs="*", metavar="NAME", help="default: every installed model")
    verify.add_argument("--json", action="store_true", help="print JSON")
    verify.set_defaults(handler=_cmd_models_verify)

    remove = actions.add_parser("remove", help="delete installed models")
    remove.add_argument("names", nargs="+", metavar="NAME")
    remove.add_argument("--json", action="store_true", help="print JSON")
    remove.set_defaults(handler=_cmd_models_remove)


def _add_engine_flags(parser: argparse.ArgumentParser) -> None:
    _add_model_flag(parser)
    _add_choice(
        parser,
        "--engine",
        Engine.AUTO,
        "recogniser engine; auto: ort for Whisper, sherpa otherwise",
    )
    _add_choice(
        parser,
        "--provider",
        Provider.AUTO,
        "execution provider to ask for; the one that really ran is reported",
    )
    _add_choice(
        parser, "--precision", Precision.AUTO, "model variant; auto: int8 on CPU, fp32 on GPU"
    )
    parser.add_argument(
        "--threads",
        type=thread_count(),
        default=default_threads(),
        help="CPU threads for inference",
    )
    parser.add_argument("--language", default="en", help="language of multilingual models")


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
    from app.inference.remote import add_remote_flags

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


def _add_bench_parser(commands: Subcommands) -> None:
    bench = commands.add_parser(
        "bench",
        help="accuracy, latency and memory of the engines against faster-whisper",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    bench.add_argument("--manifest", required=True, help="TSV with id, wav, reference columns")
    bench.add_argument(
        "--engines",
        default="ort,sherpa",
        type=_parse_choices(Engine),
        help="comma-separated engines to measure",
    )
    bench.add_argument("--peer", default="faster-whisper", choices=["faster-whisper", "none"])
    _add_model_flag(bench)
    _add_choice(bench, "--provider", Provider.CPU)
    _add_choice(bench, "--precision", Precision.INT8)
    bench.add_argument(
        "--threads",
        type=thread_count(),
        default=default_threads(),
        help="CPU threads, for every engine and the peer",
    )
    bench.add_argument(
        "--repeats",
        type=int_range(1, MAX_RUNS),
        default=3,
        help="runs per clip; the median counts",
    )
    bench.add_argument(
        "--max-clip-s", type=positive_seconds, default=28.0, help="longest clip scored"
    )
    bench.add_argument(
        "--streaming-clip",
        default="osr_us_000_0034_8k",
        help="manifest id streamed at real time; '' to skip",
    )
    bench.add_argument(
        "--json", dest="json_out", default=None, metavar="OUT", help="write the results here"
    )
    bench.add_argument(
        "--live",
        action="store_true",
        help="also stream the clips of at most 25 s at real time with and without live text",
    )
    bench.add_argument("--matrix", action="store_true", help="models x precisions x providers")
    bench.add_argument(
        "--models",
        default=None,
        type=_names,
        help="matrix: comma-separated model names",
    )
    bench.add_argument(
        "--precisions",
        default="fp32,int8",
        type=_parse_choices(Precision),
        help="matrix: precisions",
    )
    bench.add_argument(
        "--providers",
        default="cpu,cuda",
        type=_parse_choices(Provider),
        help="matrix: providers to ask for",
    )
    bench.add_argument("--chart", default=None, metavar="PNG", help="matrix: bar chart file")
    bench.set_defaults(handler=_cmd_bench)


def _names(value: str) -> list[str]:
    return [name for name in value.split(",") if name]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = get_args(argv)
        handler: Handler = args.handler
        return handler(args)
    except VoxtrayError as exc:
        _say_error(exc)
        return int(exc.exit_code)
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        print("voxtray: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("VOXTRAY_DEBUG"):
            raise
        if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
            _say_error(disk_error(exc, printable(exc.filename or "the data folder")))
            return int(ExitCode.DISK)
        print(
            f"voxtray: internal error: {exc.__class__.__name__}: {printable(str(exc))} "
            "(set VOXTRAY_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return int(ExitCode.INTERNAL)


# The shell's status for a writer whose reader went away (128 + SIGPIPE).
STDOUT_CLOSED = 141


def _stdout_closed() -> int:
    """The reader of stdout quit (`voxtray ... | head`): stop quietly. Later writes, and
    the flush at exit, go to /dev/null so they raise nothing more."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return STDOUT_CLOSED


# Errors of the disk itself, whichever write hit them: never a bug of Voxtray.
_DISK_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT})


def _say_error(exc: BaseException) -> None:
    print(f"voxtray: error: {printable(str(exc))}", file=sys.stderr)


def _print_json(value: Mapping[str, object]) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


# --- run -------------------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    from app.control import socket_path
    from app.paths import data_home, writable_folder

    # Settings, history and the control socket are written from the app's threads; a data
    # folder that cannot take them is reported here, naming it, before any window opens.
    writable_folder(data_home(), "the data folder")
    writable_folder(socket_path().parent, "the run folder")
    from app.ui.app import run_app

    return run_app(force_window=args.window)


def _cmd_control(args: argparse.Namespace) -> int:
    from app.control import send, socket_path
    from app.paths import HOME_ENV, check_folder, data_home

    if os.environ.get(HOME_ENV):
        check_folder(data_home(), "the data folder")
    check_folder(socket_path().parent, "the run folder")
    reply = send(args.control)
    if args.json:
        _print_json(reply)
        return int(ExitCode.OK)
    line = f"{reply.get('state', '?')}"
    if reply.get("detail"):
        line += f" ({reply['detail']})"
    print(line)
    last = reply.get("last")
    if args.control == "status" and last:
        timings = last.get("timings_ms", {})
        print(f"last: {last.get('text', '')!r} in {timings.get('total', 0):.0f} ms")
    return int(ExitCode.OK)


# --- models ----------------------------------------------------------------------------


def _store() -> ModelStore:
    from app.models.catalog import load_catalog
    from app.models.store import ModelStore
    from app.paths import check_utf8_name, models_dir

    check_utf8_name(models_dir(), "the model store")
    return ModelStore(models_dir(), load_catalog())


def _cmd_models_list(args: argparse.Namespace) -> int:
    from app.models.listing import LEGEND, format_table, model_rows

    rows = model_rows(_store())
    if args.json:
        _print_json({"models": [row.to_json() for row in rows]})
    else:
        print(format_table(rows))
        print(LEGEND, file=sys.stderr)
    return int(ExitCode.OK)


def _cmd_models_install(args: argparse.Namespace) -> int:
    store = _store()
    names = list(args.names) + (store.catalog.defaults if args.defaults else [])
    if not names:
        raise VoxtrayError("name a model to install, or pass --defaults", ExitCode.USAGE)
    for name in names:
        store.catalog.get(name)
    results = [
        _install_one(store, name, force=args.force, allow_unpinned=args.allow_unpinned)
        for name in dict.fromkeys(names)
    ]
    if args.json:
        _print_json({"results": results})
    return int(ExitCode.OK)


def _install_one(
    store: ModelStore, name: str, *, force: bool, allow_unpinned: bool = False
) -> dict[str, object]:
    already = store.get(name) is not None and not force
    model = _install(store, name, force=force, allow_unpinned=allow_unpinned, quiet=already)
    seconds = model.manifest.get("install_seconds")
    return {
        "name": name,
        "installed": True,
        "already_installed": already,
        "path": str(model.path),
        "install_seconds": seconds,
        "files": len(model.manifest["files"]),
    }


def _install(
    store: ModelStore, name: str, *, force: bool, allow_unpinned: bool = False, quiet: bool = False
) -> InstalledModel:
    from app.progress import StderrProgress

    if not quiet:
        print(f"installing {name}", file=sys.stderr)
    model = store.install(
        name, force=force, progress=StderrProgress(name), allow_unpinned=allow_unpinned
    )
    if not quiet:
        seconds = model.manifest.get("install_seconds")
        print(f"installed {name} in {seconds:.1f} s -> {model.path}", file=sys.stderr)
    return model


def _installer(store: ModelStore) -> Installer:
    """Installs a missing model the way `voxtray models install` does, progress on stderr."""

    def install(name: str, force: bool) -> InstalledModel:
        return _install(store, name, force=force)

    return install


def _cmd_models_verify(args: argparse.Namespace) -> int:
    store = _store()
    names = list(args.names) or [model.name for model in store.installed()]
    reports = [store.verify(name) for name in names]
    if args.json:
        _print_json(
            {
                "results": [
                    {
                        "name": r.name,
                        "ok": r.ok,
                        "installed": r.installed,
                        "files_checked": r.files_checked,
                        "problems": [p.__dict__ for p in r.problems],
                    }
                    for r in reports
                ]
            }
        )
    else:
        for report in reports:
            print(report.summary(), file=sys.stdout if report.ok else sys.stderr)
    if any(not r.installed for r in reports):
        return int(ExitCode.NOT_FOUND)
    return int(ExitCode.OK if all(r.ok for r in reports) else ExitCode.CORRUPT)


def _cmd_models_remove(args: argparse.Namespace) -> int:
    store = _store()
    results = [{"name": name, "removed": store.remove(name)} for name in args.names]
    if args.json:
        _print_json({"results": results})
    else:
        for row in results:
            state = "removed" if row["removed"] else "was not installed"
            print(f"{row['name']}: {state}", file=sys.stderr)
    return int(ExitCode.OK)


# --- transcribe ------------------------------------------------------------------------


def _cmd_transcribe(args: argparse.Namespace) -> int:
    from app.inference.assembly import build_pipeline
    from app.inference.engines import EngineChoice
    from app.inference.remote import fallback_fields
    from app.text.vocabulary import load_vocabulary
    from app.transcripts.batch import FileOutcome, transcribe_files

    fmt = args.format or TranscriptFormat.TXT
    # A missing file is a NotFoundError (exit 3), not a usage error.
    args.vocabulary = load_vocabulary(args.vocabulary) if args.vocabulary else ()
    store = _store()

    pipelines: list[DictationPipeline] = []

    def make_pipeline() -> DictationPipeline:
        pipeline = build_pipeline(
            store,
            EngineChoice.of(args),
            model_name=args.model,
            install=_installer(store),
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
            _print_json(row)
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
    from app.inference.remote import remote_with_fallback

    return functools.partial(remote_with_fallback, args)


def _transcript_json(name: str, record: UtteranceRecord) -> dict[str, object]:
    timings = {"vad": record.vad_ms, "stt": record.stt_ms, **record.stage_totals_ms()}
    return {
        "file": name,
        "text": record.text,
        "model": record.model,
        "engine": record.engine,
        "provider": record.provider,
        "duration_s": round(record.audio_s, 3),
        "timings_ms": {stage: round(ms, 2) for stage, ms in timings.items()},
        "segments": [
            {
                "start_s": s.start_s,
                "end_s": s.end_s,
                "text": s.text,
                "stt_ms": round(s.stt_ms, 2),
                "guards": s.guards,
            }
            for s in record.segments
        ],
    }


# --- bench -----------------------------------------------------------------------------


def _cmd_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    json_out = _output_file(args.json_out, "--json")
    chart = _output_file(args.chart, "--chart")
    store = _store()
    if args.matrix:
        from app.bench_matrix import MatrixOptions, run_matrix

        matrix = MatrixOptions(
            manifest=Path(args.manifest),
            models=tuple(args.models or ()),
            precisions=tuple(args.precisions),
            providers=tuple(args.providers),
            threads=args.threads,
            max_clip_s=args.max_clip_s,
            json_out=json_out,
            chart=chart,
        )
        run_matrix(store, matrix, _installer(store), _save_chart)
        return int(ExitCode.OK)
    from app.benchmark import BenchOptions, run_bench

    options = BenchOptions(
        manifest=Path(args.manifest),
        engines=tuple(args.engines),
        peer=args.peer == "faster-whisper",
        model=args.model,
        provider=args.provider,
        precision=args.precision,
        threads=args.threads,
        repeats=args.repeats,
        max_clip_s=args.max_clip_s,
        streaming_clip=args.streaming_clip,
        json_out=json_out,
        live=args.live,
    )
    run_bench(store, options, _installer(store))
    return int(ExitCode.OK)


def _output_file(name: str | None, flag: str) -> Path | None:
    """A report file the bench writes at its end, checked before the minutes of measuring."""
    from pathlib import Path

    if name is None:
        return None
    path = Path(name)
    if not name or path.is_dir():
        raise BadInputError(f"{flag} {printable(name)!r}: a file name is needed, not a folder")
    from app.paths import writable_folder

    writable_folder(path.parent, f"the {flag} folder")
    return path


def _save_chart(cells: list[MatrixCell], path: Path, title: str) -> None:
    from app.ui.chart import save_matrix_chart

    save_matrix_chart(cells, path, title)


# --- selftest --------------------------------------------------------------------------


def _cmd_selftest(args: argparse.Namespace) -> int:
    from app.gpu.selftest import run_selftest
    from app.inference.assembly import ensure_installed

    store = _store()
    name = args.model or store.catalog.default_stt
    model = ensure_installed(store, name, install=_installer(store))
    report = run_selftest(
        model,
        args.provider,
        precision=args.precision,
        runs=args.runs,
        gpu_index=args.gpu_index,
        progress=lambda message: print(f"selftest: {message}", file=sys.stderr),
    )
    if args.json:
        _print_json(report.to_json())
    else:
        print(report.text_report())
    return int(report.exit_code)
