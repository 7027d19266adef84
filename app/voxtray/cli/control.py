"""`voxtray toggle|start|stop|show|quit|status`: one request to the running app.

A key binding runs these on every press and the release waits for them, so they are
parsed here without the full command line (which imports every engine's options)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from voxtray import HOME_ENV
from voxtray.cli.guard import print_json, repair_line
from voxtray.control.client import NotRunningError, UnsafeSocketError, send, socket_file
from voxtray.errors import ExitCode

if TYPE_CHECKING:
    import argparse

    from voxtray.cli.args import Subcommands

CONTROL_COMMANDS = {
    "toggle": "start or stop dictation in the running app",
    "start": "start dictation in the running app (push-to-talk pressed)",
    "stop": "stop dictation in the running app (released); the text is typed",
    "show": "bring the running app forward",
    "quit": "quit the running app",
    "status": "the running app's state and last utterance",
}


def register(commands: Subcommands) -> None:
    """The full parser's entries for these (`--help`, typos); `is_control` lines skip it."""
    for command, text in CONTROL_COMMANDS.items():
        control = commands.add_parser(command, help=text)
        control.add_argument("--json", action="store_true", help="print JSON")
        control.set_defaults(handler=_run_parsed, control=command)


def _run_parsed(args: argparse.Namespace) -> int:
    return run_control(args.control, as_json=args.json)


def is_control(argv: Sequence[str]) -> bool:
    """A control command with at most `--json` (`--help` and typos go to the full parser)."""
    return bool(argv) and argv[0] in CONTROL_COMMANDS and all(a == "--json" for a in argv[1:])


def run_control(command: str, as_json: bool) -> int:
    """Send `command` and print the reply; raises the errors `guarded` reports."""
    try:
        reply = send(command)
    except (NotRunningError, UnsafeSocketError):
        _check_folders()  # a file where a folder should be: say so, rather than these
        raise
    if as_json:
        print_json(reply)
        return int(ExitCode.OK)
    line = f"{reply.get('state', '?')}"
    if reply.get("detail"):
        line += f" ({reply['detail']})"
    print(line)
    if damaged := reply.get("damaged_model"):
        print(repair_line(str(damaged)))
    hotkey = reply.get("hotkey")
    if command == "status" and isinstance(hotkey, dict):
        print(f"hotkey: {hotkey_line(hotkey)}")
    last = reply.get("last")
    if command == "status" and last:
        timings = last.get("timings_ms", {})
        language = f" ({last['language']})" if last.get("language") else ""
        print(f"last: {last.get('text', '')!r}{language} in {timings.get('total', 0):.0f} ms")
    return int(ExitCode.OK)


def hotkey_line(hotkey: dict[str, object]) -> str:
    """The status reply's hotkey in words: its backend, and the desktop's binding."""
    line = str(hotkey.get("backend", "none"))
    if "bound" not in hotkey:
        return line
    if hotkey["bound"]:
        return f"{line}, bound by the desktop ({hotkey.get('trigger') or 'no key yet'})"
    if hotkey.get("problem"):
        return f"{line}, not bound: {hotkey['problem']}"
    return f"{line}, waiting for the desktop to bind it (it may be asking you)"


def _check_folders() -> None:
    from pathlib import Path

    from voxtray.paths import check_folder, data_home

    if os.environ.get(HOME_ENV):
        check_folder(data_home(), "the data folder")
    check_folder(Path(socket_file()).parent, "the run folder")
