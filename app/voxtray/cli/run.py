"""`voxtray run` (and `voxtray` alone): the tray app."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voxtray.cli.args import Subcommands


def register(commands: Subcommands) -> None:
    run = commands.add_parser("run", help="start the app (the default command)")
    run.add_argument("--window", action="store_true", help="a window instead of a tray icon")
    run.set_defaults(handler=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    from voxtray.control.server import socket_path
    from voxtray.paths import data_home, writable_folder

    # Settings, history and the control socket are written from the app's threads; a data
    # folder that cannot take them is reported here, naming it, before any window opens.
    writable_folder(data_home(), "the data folder")
    writable_folder(socket_path().parent, "the run folder")
    from voxtray.ui.run import run_app

    return run_app(force_window=args.window)
