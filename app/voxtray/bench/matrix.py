"""`voxtray bench --matrix`: every model x precision x provider on the ort engine, with the
provider that really ran, cold and warm latency, RTF, WER and a broken-output flag."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from voxtray.bench.runner import (
    MatrixCell,
    load_manifest,
    machine_info,
    matrix_cell,
    recognizer_loader,
)
from voxtray.choices import Engine, Precision, Provider
from voxtray.inference.assembly import Installer, ensure_installed
from voxtray.inference.engines import EngineChoice
from voxtray.models.store import ModelStore

ChartFn = Callable[[list[MatrixCell], Path, str], None]
"""Draws the cells as a chart file under a title."""


@dataclass(frozen=True)
class MatrixOptions:
    """What `voxtray bench --matrix` measures; the defaults are the command line's."""

    manifest: Path
    models: tuple[str, ...] = ()  # empty: the catalog's default model
    precisions: tuple[Precision, ...] = (Precision.FP32, Precision.INT8)
    providers: tuple[Provider, ...] = (Provider.CPU, Provider.CUDA)
    threads: int = 2
    max_clip_s: float = 28.0
    json_out: Path | None = None
    chart: Path | None = None


def run_matrix(
    store: ModelStore,
    options: MatrixOptions,
    install: Installer | None = None,
    save_chart: ChartFn | None = None,
) -> dict[str, object]:
    """Measure every cell, write the report (`json_out`) and the chart (`chart`, drawn by
    `save_chart`), print the table. Progress goes to stderr, the table to stdout."""
    names = options.models or (store.catalog.default_stt,)
    clips = load_manifest(options.manifest, options.max_clip_s)
    cells = []
    for name in names:
        model = ensure_installed(store, name, install=install)
        for precision in options.precisions:
            for provider in options.providers:
                choice = EngineChoice(
                    engine=Engine.ORT,
                    provider=provider,
                    precision=precision,
                    threads=options.threads,
                )
                load = recognizer_loader(model, choice)
                cell = matrix_cell(name, precision.value, provider.value, load, clips)
                cells.append(cell)
                print(f"  {json.dumps(asdict(cell))}", file=sys.stderr)
    report: dict[str, object] = {
        "machine": machine_info(),
        "clips": len(clips),
        "matrix": [asdict(c) for c in cells],
    }
    if options.json_out:
        options.json_out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if options.chart and save_chart is not None:
        save_chart(cells, options.chart, f"Voxtray: warm latency per clip, {len(clips)} clips")
    for cell in cells:
        _print_cell(cell)
    return report


def _print_cell(cell: MatrixCell) -> None:
    flag = f"  BROKEN: {cell.broken}" if cell.broken else ""
    fallback = "" if cell.provider == cell.requested else f" (asked {cell.requested})"
    print(
        f"{cell.model:<18} {cell.precision:<5} {cell.provider:<9}{fallback:<14} "
        f"cold {cell.cold_ms:7.0f} ms  warm {cell.warm_ms:6.0f} ms  RTF {cell.rtf:.3f}  "
        f"WER {cell.wer:6.2%}{flag}"
    )
