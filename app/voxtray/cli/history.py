"""`voxtray history`: open the History window in the running app, or with `--json` print
the entries, newest first, one JSON object a line (reading the history, writing nothing)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from voxtray.cli.args import int_range
from voxtray.errors import ExitCode

if TYPE_CHECKING:
    import argparse

    from voxtray.cli.args import Subcommands

MAX_LIMIT = 1_000_000


def register(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "history",
        help="open the History window in the running app; --json lists past dictations",
    )
    parser.add_argument("--json", action="store_true", help="print entries as JSON lines")
    parser.add_argument(
        "--search", default="", metavar="TEXT", help="only entries with these words"
    )
    parser.add_argument(
        "--limit", type=int_range(0, MAX_LIMIT), default=100, help="at most N entries"
    )
    parser.add_argument("--all", action="store_true", help="include empty dictations")
    parser.set_defaults(handler=run_history)


def run_history(args: argparse.Namespace) -> int:
    if args.json:
        return _print_entries(args.search, limit=args.limit, include_empty=args.all)
    return _open_window()


def _print_entries(search: str, *, limit: int, include_empty: bool) -> int:
    from voxtray.cli.guard import print_json
    from voxtray.errors import NotFoundError
    from voxtray.history.export import entry_record
    from voxtray.history.store import History

    try:
        history = History(read_only=True)
    except NotFoundError:
        return int(ExitCode.OK)  # no dictation yet
    with history:
        entries = history.search(search, include_empty=include_empty, limit=limit)
    for entry in entries:
        print_json(entry_record(entry))
    damaged = sum(entry.damage is not None for entry in entries)
    if damaged:
        print(
            f"voxtray: {damaged} of these entries are damaged: listed with what could be "
            "read (see `damaged`)",
            file=sys.stderr,
        )
    return int(ExitCode.OK)


def _open_window() -> int:
    from voxtray.control.client import NotRunningError, send

    try:
        send("history")
    except NotRunningError:
        print(
            "voxtray: the app is not running; start it with `voxtray`, then run "
            "`voxtray history` or choose History… in its tray menu "
            "(`voxtray history --json` lists entries without it)",
            file=sys.stderr,
        )
        return int(ExitCode.NOT_RUNNING)
    print("History window opened", file=sys.stderr)
    return int(ExitCode.OK)
