"""The `voxtray` command: control commands go straight to the running app, the rest to
the full command line (`voxtray.cli.main`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from voxtray.cli.control import is_control

    if is_control(argv):
        from voxtray.cli.control import run_control
        from voxtray.cli.guard import guarded

        return guarded(lambda: run_control(argv[0], as_json=len(argv) > 1))
    from voxtray.cli.main import main as cli_main

    return cli_main(argv)
