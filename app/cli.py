"""Voxtray's command line.

    voxtray [--window]              start the tray app (installs the default models first)
    voxtray toggle|start|stop|show|quit|status [--json]
    voxtray models list [--json]
    voxtray models install NAME... [--defaults] [--force] [--json]
    voxtray models verify [NAME...] [--json]
    voxtray models remove NAME... [--json]
    voxtray transcribe FILE... [--model NAME] [--engine auto|ort|sherpa]
                       [--provider auto|cpu|cuda|tensorrt] [--json]
    voxtray bench --manifest TSV [--engines ort,sherpa] [--peer faster-whisper] [--json OUT]

Messages go to stderr; stdout carries only results (text or JSON). Exit codes are the
`ExitCode` enum in app/errors.py, tabled in docs/cli.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from app import __version__
from app.errors import CorruptError, ExitCode, VoxtrayError

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
    selftest = commands.add_parser(
        "selftest",
        help="is the GPU really used? checks, CPU vs GPU runs, verdict and fix",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    selftest.add_argument("--provider", default="auto", choices=["auto", "cpu", "cuda", "tensorrt"])
    selftest.add_argument("--model", default=None, help="catalog name (default: the default model)")
    selftest.add_argument("--precision", default="auto", choices=["auto", "int8", "fp32"])
    selftest.add_argument("--runs", type=int, default=5, help="warm runs per provider")
    selftest.add_argument("--json", action="store_true", help="print JSON")
    selftest.set_defaults(handler=_cmd_selftest)
    from app.serve.cli import add_serve_parser

    add_serve_parser(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    return args


def _add_models_parser(commands: Any) -> None:
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
    parser.add_argument("--model", default=None, help="catalog name (default: the default model)")
    parser.add_argument(
        "--engine",
        default="auto",
        choices=["auto", "ort", "sherpa"],
        help="recogniser engine; auto: ort for Whisper, sherpa otherwise",
    )
    parser.add_argument(
        "--provider",
        default="auto",
        choices=["auto", "cpu", "cuda", "tensorrt"],
        help="execution provider to ask for; the one that really ran is reported",
    )
    parser.add_argument(
        "--precision",
        default="auto",
        choices=["auto", "int8", "fp32"],
        help="model variant; auto: int8 on CPU, fp32 on GPU",
    )
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for inference")
    parser.add_argument("--language", default="en", help="language of multilingual models")


def _add_transcribe_parser(commands: Any) -> None:
    transcribe = commands.add_parser(
        "transcribe",
        help="transcribe audio files (WAV, FLAC, OGG, MP3)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    transcribe.add_argument("files", nargs="+", metavar="FILE")
    _add_engine_flags(transcribe)
    from app.inference.remote import add_remote_flags

    add_remote_flags(transcribe)
    transcribe.add_argument("--json", action="store_true", help="one JSON object per file per line")
    transcribe.set_defaults(handler=_cmd_transcribe)


def _add_bench_parser(commands: Any) -> None:
    bench = commands.add_parser(
        "bench",
        help="accuracy, latency and memory of the engines against faster-whisper",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    bench.add_argument("--manifest", required=True, help="TSV with id, wav, reference columns")
    bench.add_argument("--engines", default="ort,sherpa", help="comma-separated engines to measure")
    bench.add_argument("--peer", default="faster-whisper", choices=["faster-whisper", "none"])
    bench.add_argument("--model", default=None, help="catalog name (default: the default model)")
    bench.add_argument("--provider", default="cpu", choices=["auto", "cpu", "cuda", "tensorrt"])
    bench.add_argument("--precision", default="int8", choices=["auto", "int8", "fp32"])
    bench.add_argument(
        "--threads", type=int, default=2, help="CPU threads, for every engine and the peer"
    )
    bench.add_argument("--repeats", type=int, default=3, help="runs per clip; the median counts")
    bench.add_argument("--max-clip-s", type=float, default=28.0, help="longest clip scored")
    bench.add_argument(
        "--streaming-clip",
        default="osr_us_000_0034_8k",
        help="manifest id streamed at real time; '' to skip",
    )
    bench.add_argument(
        "--json", dest="json_out", default=None, metavar="OUT", help="write the results here"
    )
    bench.add_argument("--matrix", action="store_true", help="models x precisions x providers")
    bench.add_argument("--models", default=None, help="matrix: comma-separated model names")
    bench.add_argument("--precisions", default="fp32,int8", help="matrix: precisions")
    bench.add_argument("--providers", default="cpu,cuda", help="matrix: providers to ask for")
    bench.add_argument("--chart", default=None, metavar="PNG", help="matrix: bar chart file")
    bench.set_defaults(handler=_cmd_bench)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = get_args(argv)
        handler: Handler = args.handler
        return handler(args)
    except VoxtrayError as exc:
        print(f"voxtray: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("voxtray: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("VOXTRAY_DEBUG"):
            raise
        print(
            f"voxtray: internal error: {exc.__class__.__name__}: {exc} "
            "(set VOXTRAY_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return int(ExitCode.INTERNAL)


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


# --- run -------------------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    from app.ui.app import run_app

    return run_app(force_window=args.window)


def _cmd_control(args: argparse.Namespace) -> int:
    from app.control import send

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


def _store() -> Any:
    from app.models.catalog import load_catalog
    from app.models.store import ModelStore
    from app.paths import models_dir

    return ModelStore(models_dir(), load_catalog())


def _cmd_models_list(args: argparse.Namespace) -> int:
    store = _store()
    rows = []
    for entry in store.catalog.models.values():
        installed = store.get(entry.name)
        rows.append(
            {
                "name": entry.name,
                "family": entry.family,
                "languages": list(entry.languages),
                "size_mb": entry.size_mb,
                "precisions": entry.precisions,
                "license": entry.license,
                "source": "pypi" if hasattr(entry.source, "wheels") else "url",
                "default": entry.name in store.catalog.defaults,
                "installed": installed is not None,
                "path": str(installed.path) if installed else None,
                "description": entry.description,
            }
        )
    if args.json:
        _print_json({"models": rows})
        return int(ExitCode.OK)
    for row in rows:
        mark = "*" if row["installed"] else " "
        default = " (default)" if row["default"] else ""
        print(
            f"{mark} {row['name']:<24} {row['family']:<16} {row['size_mb']:>6.0f} MB  "
            f"{','.join(row['precisions']):<10} {row['source']:<4}{default}"
        )
    print("* installed", file=sys.stderr)
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
    store: Any, name: str, *, force: bool, allow_unpinned: bool = False
) -> dict[str, Any]:
    from app.progress import StderrProgress

    already = store.get(name) is not None and not force
    if not already:
        print(f"installing {name}", file=sys.stderr)
    model = store.install(
        name, force=force, progress=StderrProgress(name), allow_unpinned=allow_unpinned
    )
    seconds = model.manifest.get("install_seconds")
    if not already:
        print(f"installed {name} in {seconds:.1f} s -> {model.path}", file=sys.stderr)
    return {
        "name": name,
        "installed": True,
        "already_installed": already,
        "path": str(model.path),
        "install_seconds": seconds,
        "files": len(model.manifest["files"]),
    }


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


def _build_pipeline(args: argparse.Namespace) -> Any:
    from app.inference.engines import EngineChoice, create_recognizer
    from app.inference.pipeline import DictationPipeline
    from app.inference.vad import SileroVad

    store = _store()
    model_name = args.model or store.catalog.default_stt
    model = _ensure_model(store, model_name)
    vad_model = _ensure_model(store, store.catalog.default_vad)
    choice = EngineChoice.of(args)

    def local() -> Any:
        try:
            return create_recognizer(model, choice)
        except CorruptError as exc:
            raise CorruptError(f"{exc}; {_repair_hint(model.name)}") from None

    if getattr(args, "server", None):
        from app.inference.remote import remote_with_fallback

        recognizer = remote_with_fallback(args, local)
    else:
        recognizer = local()
    recognizer.warmup()
    return DictationPipeline(SileroVad(vad_model.variant_files("fp32")["model"]), recognizer)


def _repair_hint(name: str) -> str:
    return (
        f"check with: voxtray models verify {name}; "
        f"repair with: voxtray models install {name} --force"
    )


def _ensure_model(store: Any, name: str) -> Any:
    model = store.get(name)
    if model is None:
        store.catalog.get(name)
        _install_one(store, name, force=False)
        model = store.require(name)
    return model


def _cmd_transcribe(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.audio.decode import load_audio
    from app.inference.pipeline import chunked

    pipeline = _build_pipeline(args)
    status = ExitCode.OK
    for name in args.files:
        try:
            audio = load_audio(Path(name))
        except VoxtrayError as exc:
            print(f"voxtray: error: {exc}", file=sys.stderr)
            status = status or exc.exit_code
            continue
        record = pipeline.transcribe(chunked(audio, 16000))
        if args.json:
            from app.inference.remote import fallback_fields

            _print_json({**_transcript_json(name, record), **fallback_fields(pipeline.recognizer)})
        else:
            sys.stdout.write(record.text + "\n")
            sys.stdout.flush()
    return int(status)


def _transcript_json(name: str, record: Any) -> dict[str, Any]:
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

    from app import benchmark
    from app.inference.engines import EngineChoice, create_recognizer

    if args.matrix:
        return _bench_matrix(args)
    store = _store()
    model = _ensure_model(store, args.model or store.catalog.default_stt)
    vad_model = _ensure_model(store, store.catalog.default_vad)
    clips = benchmark.load_manifest(Path(args.manifest), args.max_clip_s)
    print(f"bench: {len(clips)} clips, model {model.name}, {args.threads} threads", file=sys.stderr)
    results = []
    peer = None
    if args.peer == "faster-whisper":
        loader = benchmark.faster_whisper_loader(model.path / "ct2", args.threads)
        peer = benchmark.measure("faster-whisper", loader, clips, args.repeats)
        _report_engine(peer)
    checks: dict[str, Any] = {}
    for engine in [e for e in args.engines.split(",") if e]:
        choice = EngineChoice(
            engine=engine, provider=args.provider, precision=args.precision, threads=args.threads
        )

        def load(choice: EngineChoice = choice) -> tuple[Any, str]:
            recognizer = create_recognizer(model, choice)
            return (lambda audio: recognizer.transcribe(audio).text), recognizer.provider

        result = benchmark.measure(engine, load, clips, args.repeats)
        results.append(result)
        _report_engine(result)
        recognizer = create_recognizer(model, choice)
        checks[engine] = _bench_checks(
            recognizer, vad_model, Path(args.manifest), args.streaming_clip
        )
        print(f"  {engine} checks: {json.dumps(checks[engine])}", file=sys.stderr)
    benchmark.add_ratios(results, peer)
    report = {
        "model": model.name,
        "precision": args.precision,
        "threads": args.threads,
        "clips": len(clips),
        "machine": benchmark.machine_info(),
        "results": [r.summary() for r in ([peer] if peer else []) + results],
        "checks": checks,
        "texts": {r.name: r.texts for r in ([peer] if peer else []) + results},
    }
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    for row in report["results"]:
        ratio = f" ratio {row['ratio_to_peer']:.2f}" if row.get("ratio_to_peer") else ""
        print(
            f"{row['name']:<16} WER {row['wer']:6.2%}  median {row['median_ms']:6.0f} ms  "
            f"p90 {row['p90_ms']:6.0f} ms  RTF {row['rtf']:.3f}  RSS {row['peak_rss_mb']:.0f} MB  "
            f"{row['provider']}{ratio}"
        )
    return int(ExitCode.OK)


def _report_engine(result: Any) -> None:
    print(
        f"  {result.name}: WER {result.wer:.2%}, median {result.median_ms:.0f} ms",
        file=sys.stderr,
    )


def _bench_checks(
    recognizer: Any, vad_model: Any, manifest: Any, streaming_clip: str
) -> dict[str, Any]:
    import time

    import numpy as np

    from app.audio.decode import load_audio
    from app.inference.pipeline import DictationPipeline, chunked, paced
    from app.inference.vad import SileroVad

    recognizer.warmup()
    rng = np.random.default_rng(0)
    silence = np.zeros(160000, np.float32)
    noise = (rng.standard_normal(160000) * 0.1).astype(np.float32)
    pipeline = DictationPipeline(SileroVad(vad_model.variant_files("fp32")["model"]), recognizer)
    checks: dict[str, Any] = {
        "silence_text": recognizer.transcribe(silence).text,
        "noise_text": recognizer.transcribe(noise).text,
        "silence_pipeline_text": pipeline.transcribe(chunked(silence)).text,
        "noise_pipeline_text": pipeline.transcribe(chunked(noise)).text,
    }
    if streaming_clip:
        import csv

        with open(manifest, encoding="utf-8", newline="") as stream:
            rows = {
                r["id"]: r for r in csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE)
            }
        if streaming_clip in rows:
            audio = load_audio(manifest.parent / rows[streaming_clip]["wav"])
            began = time.perf_counter()
            pipeline.transcribe(chunked(audio))
            whole_ms = 1000 * (time.perf_counter() - began)
            streamed = pipeline.transcribe(paced(chunked(audio, 1600)))
            # Released the moment the last word ends: the last segment is still open then,
            # which is the hard case for push-to-talk.
            cut = pipeline.transcribe(paced(chunked(_trim_trailing_quiet(audio), 1600)))
            checks["streaming"] = {
                "clip": streaming_clip,
                "audio_s": round(audio.size / 16000, 2),
                "whole_file_ms": round(whole_ms, 1),
                "release_to_text_ms": round(streamed.release_to_text_ms, 1),
                "ratio": round(streamed.release_to_text_ms / whole_ms, 3),
                "release_at_last_word_ms": round(cut.release_to_text_ms, 1),
                "ratio_at_last_word": round(cut.release_to_text_ms / whole_ms, 3),
                "segments": len(streamed.segments),
            }
    return checks


def _trim_trailing_quiet(audio: Any, floor_dbfs: float = -40.0) -> Any:
    """Cut the audio after its last 10 ms frame louder than `floor_dbfs`."""
    import numpy as np

    frames = audio[: audio.size - audio.size % 160].reshape(-1, 160)
    loud = np.flatnonzero(np.sqrt(np.mean(frames**2, axis=1)) > 10 ** (floor_dbfs / 20))
    return audio[: (int(loud[-1]) + 1) * 160] if loud.size else audio


def _bench_matrix(args: argparse.Namespace) -> int:
    from dataclasses import asdict
    from pathlib import Path

    from app import benchmark
    from app.inference.engines import EngineChoice, create_recognizer

    store = _store()
    names = (args.models or store.catalog.default_stt).split(",")
    clips = benchmark.load_manifest(Path(args.manifest), args.max_clip_s)
    cells = []
    for name in names:
        model = _ensure_model(store, name)
        for precision in args.precisions.split(","):
            for provider in args.providers.split(","):
                choice = EngineChoice(
                    engine="ort", provider=provider, precision=precision, threads=args.threads
                )

                def load(choice: EngineChoice = choice, model: Any = model) -> tuple[Any, str]:
                    recognizer = create_recognizer(model, choice)
                    return (lambda audio: recognizer.transcribe(audio).text), recognizer.provider

                cell = benchmark.matrix_cell(name, precision, provider, load, clips)
                cells.append(cell)
                print(f"  {json.dumps(asdict(cell))}", file=sys.stderr)
    report = {
        "machine": benchmark.machine_info(),
        "clips": len(clips),
        "matrix": [asdict(c) for c in cells],
    }
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.chart:
        from app.ui.chart import save_matrix_chart

        save_matrix_chart(
            cells, Path(args.chart), f"Voxtray: warm latency per clip, {len(clips)} clips"
        )
    for cell in cells:
        flag = f"  BROKEN: {cell.broken}" if cell.broken else ""
        fallback = "" if cell.provider == cell.requested else f" (asked {cell.requested})"
        print(
            f"{cell.model:<18} {cell.precision:<5} {cell.provider:<9}{fallback:<14} "
            f"cold {cell.cold_ms:7.0f} ms  warm {cell.warm_ms:6.0f} ms  RTF {cell.rtf:.3f}  "
            f"WER {cell.wer:6.2%}{flag}"
        )
    return int(ExitCode.OK)


# --- selftest --------------------------------------------------------------------------


def _cmd_selftest(args: argparse.Namespace) -> int:
    from app.gpu.selftest import run_selftest

    store = _store()
    model = _ensure_model(store, args.model or store.catalog.default_stt)
    report = run_selftest(
        model,
        args.provider,
        precision=args.precision,
        runs=args.runs,
        progress=lambda message: print(f"selftest: {message}", file=sys.stderr),
    )
    if args.json:
        _print_json(report.to_json())
    else:
        print(report.text_report())
    return int(report.exit_code)
