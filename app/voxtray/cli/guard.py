"""What every `voxtray` command shares around its handler: a typed error becomes one line
and its exit code, a closed stdout a quiet stop, anything else "internal error"."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
from collections.abc import Callable, Mapping

from voxtray.errors import (
    DamagedModelError,
    ExitCode,
    VoxtrayError,
    WrongEngineError,
    disk_error,
)
from voxtray.output.tools import ConsentNeeded

# The shell's status for a writer whose reader went away (128 + SIGPIPE).
STDOUT_CLOSED = 141

# Errors of the disk itself, whichever write hit them: never a bug of Voxtray.
_DISK_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT})


def guarded(command: Callable[[], int]) -> int:
    """Run `command`, turning what it raises into a line on stderr and an exit code."""
    try:
        return command()
    except VoxtrayError as exc:
        say_error(exc)
        return int(exc.exit_code)
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        print("voxtray: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("VOXTRAY_DEBUG"):
            raise
        from voxtray.paths import printable  # pathlib: off the control commands' start-up

        if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
            say_error(disk_error(exc, printable(exc.filename or "the data folder")))
            return int(ExitCode.DISK)
        print(
            f"voxtray: internal error: {exc.__class__.__name__}: {printable(str(exc))} "
            "(set VOXTRAY_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return int(ExitCode.INTERNAL)


def print_json(value: Mapping[str, object]) -> None:
    """One JSON object on one line of stdout (non-ASCII kept as is)."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


def say_error(exc: BaseException) -> None:
    from voxtray.paths import printable

    print(f"voxtray: error: {printable(worded(exc))}", file=sys.stderr)


def repair_line(model: str) -> str:
    """What checks and reinstalls a damaged installed model, on the command line."""
    return (
        f"check with: voxtray models verify {model}; "
        f"repair with: voxtray models install {model} --force"
    )


def worded(exc: BaseException) -> str:
    """`exc` as the command line says it: the core's words, and the flag that acts on them
    where the core's remedy is a front end's choice."""
    if isinstance(exc, DamagedModelError):
        return f"{exc}; {repair_line(exc.model)}"
    if isinstance(exc, WrongEngineError):
        return f"{exc} (use --engine {exc.engine})"
    if isinstance(exc, ConsentNeeded):
        return f"{exc}; run `voxtray doctor` to be asked again"
    if isinstance(exc, VoxtrayError) and exc.exit_code in (ExitCode.USAGE, ExitCode.NOT_FOUND):
        # Only on these errors' way out.
        from voxtray.models.store_errors import NotInstalledError, UnpinnedError

        if isinstance(exc, UnpinnedError):
            return f"{exc} (trust it with: voxtray models install {exc.model} --allow-unpinned)"
        if isinstance(exc, NotInstalledError):
            return f"{exc}; run: voxtray models install {exc.model}"
    return str(exc)


def _stdout_closed() -> int:
    """The reader of stdout quit (`voxtray ... | head`): stop quietly. Later writes, and
    the flush at exit, go to /dev/null so they raise nothing more."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return STDOUT_CLOSED
