"""`voxtray bench`: flags, and the command that runs the benchmark or the matrix."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from voxtray.choices import Engine, Precision, Provider
from voxtray.cli.args import (
    MAX_RUNS,
    add_choice,
    add_model_flag,
    default_threads,
    int_range,
    name_list,
    parse_choices,
    positive_seconds,
    thread_count,
)
from voxtray.cli.models import installer, open_store
from voxtray.errors import BadInputError, ExitCode
from voxtray.paths import printable

if TYPE_CHECKING:
    from pathlib import Path

    from voxtray.bench.runner import MatrixCell
    from voxtray.cli.args import Subcommands


def register(commands: Subcommands) -> None:
    """`voxtray bench`: accuracy and speed against the peer, or the CPU-vs-GPU matrix."""
    bench = commands.add_parser(
        "bench",
        help="accuracy, latency and memory of the engines against faster-whisper",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    bench.add_argument("--manifest", required=True, help="TSV with id, wav, reference columns")
    bench.add_argument(
        "--engines",
        default="ort,sherpa",
        type=parse_choices(Engine),
        help="comma-separated engines to measure",
    )
    bench.add_argument("--peer", default="faster-whisper", choices=["faster-whisper", "none"])
    add_model_flag(bench)
    add_choice(bench, "--provider", Provider.CPU)
    add_choice(bench, "--precision", Precision.INT8)
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
        type=name_list,
        help="matrix: comma-separated model names",
    )
    bench.add_argument(
        "--precisions",
        default="fp32,int8",
        type=parse_choices(Precision),
        help="matrix: precisions",
    )
    bench.add_argument(
        "--providers",
        default="cpu,cuda",
        type=parse_choices(Provider),
        help="matrix: providers to ask for",
    )
    bench.add_argument("--chart", default=None, metavar="PNG", help="matrix: bar chart file")
    bench.set_defaults(handler=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    json_out = _output_file(args.json_out, "--json")
    chart = _output_file(args.chart, "--chart")
    store = open_store()
    if args.matrix:
        from voxtray.bench.matrix import MatrixOptions, run_matrix

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
        run_matrix(store, matrix, installer(store), _save_chart)
        return int(ExitCode.OK)
    from voxtray.bench.runner import BenchOptions, run_bench

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
    run_bench(store, options, installer(store))
    return int(ExitCode.OK)


def _output_file(name: str | None, flag: str) -> Path | None:
    """A report file the bench writes at its end, checked before the minutes of measuring."""
    from pathlib import Path

    if name is None:
        return None
    path = Path(name)
    if not name or path.is_dir():
        raise BadInputError(f"{flag} {printable(name)!r}: a file name is needed, not a folder")
    from voxtray.paths import writable_folder

    writable_folder(path.parent, f"the {flag} folder")
    return path


def _save_chart(cells: list[MatrixCell], path: Path, title: str) -> None:
    from voxtray.ui.chart import save_matrix_chart

    save_matrix_chart(cells, path, title)
