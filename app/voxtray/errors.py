"""Errors a user can cause, each with the exit code the command line documents."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Process exit codes; the table in docs/cli.md mirrors this enum."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    NOT_FOUND = 3
    CORRUPT = 4
    NETWORK = 5
    DISK = 6
    BAD_INPUT = 7
    NOT_RUNNING = 8
    NO_DESKTOP = 9
    # `voxtray selftest` verdicts other than "works"
    GPU_FALLBACK = 10
    NO_GPU = 11
    GPU_SLOWER = 12
    BROKEN_MODEL = 13
    INTERRUPTED = 130


class VoxtrayError(Exception):
    """An error with a one-line message for the user and a documented exit code."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class NotFoundError(VoxtrayError):
    exit_code = ExitCode.NOT_FOUND


class CorruptError(VoxtrayError):
    exit_code = ExitCode.CORRUPT


class NetworkError(VoxtrayError):
    exit_code = ExitCode.NETWORK


class DiskError(VoxtrayError):
    exit_code = ExitCode.DISK


class BadInputError(VoxtrayError):
    exit_code = ExitCode.BAD_INPUT


class CancelledError(VoxtrayError):
    """The user stopped a long operation; what it had done so far is kept for a resume."""

    exit_code = ExitCode.INTERRUPTED


def disk_error(exc: OSError, what: str) -> DiskError:
    """Turn an OSError raised while writing into a one-line DiskError."""
    reason = exc.strerror or exc.__class__.__name__
    return DiskError(f"cannot write {what}: {reason}")


def first_line(source: BaseException | str | bytes) -> str:
    """The first non-blank line of an exception's message or of a tool's output, stripped.

    Args:
        source: An exception, text, or bytes (decoded as UTF-8, bad bytes replaced).

    Returns:
        The line; an exception without a message gives its class name, text without a
        non-blank line gives "".
    """
    if isinstance(source, BaseException):
        return first_line(str(source)) or type(source).__name__
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def escaped(text: str) -> str:
    """`text` with every character that is not printable (terminal escapes, line breaks,
    C1 controls) written as a Python escape: safe to print whatever it came from."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class WrongEngineError(VoxtrayError):
    """The engine asked for cannot run this model; `engine` can, as each front end says in
    its own words (a flag, a setting)."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, engine: str) -> None:
        super().__init__(message)
        self.engine = engine


class DamagedModelError(CorruptError):
    """An installed model that cannot be loaded; the store can check and reinstall it, as
    each front end says in its own words (`model` names it)."""

    def __init__(self, message: str, model: str) -> None:
        super().__init__(message)
        self.model = model
