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
    voxtray history [--json [--search TEXT] [--limit N] [--all]]
    voxtray bench --manifest TSV [--engines ort,sherpa] [--peer faster-whisper] [--json OUT]

Messages go to stderr; stdout carries only results (text or JSON). Exit codes are the
`ExitCode` enum in app/voxtray/errors.py, tabled in docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from voxtray import __version__
from voxtray.cli import (
    bench,
    control,
    devices,
    doctor,
    history,
    models,
    run,
    selftest,
    serve,
    transcribe,
)
from voxtray.cli.guard import guarded

Handler = Callable[[argparse.Namespace], int]

# In `voxtray --help` order; each module adds its parser and handler with `register`.
COMMANDS = (run, control, history, models, transcribe, bench, devices, doctor, selftest, serve)


def get_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="voxtray",
        description="Push-to-talk dictation with local speech-to-text.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"voxtray {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """The whole command line; `voxtray.entry.main` sends control commands past it."""
    argv = sys.argv[1:] if argv is None else argv

    def run_command() -> int:
        args = get_args(argv)
        handler: Handler = args.handler
        return handler(args)

    return guarded(run_command)
