"""Running the helper programs outputs use (xdotool, xclip, wl-copy...), and their error.

Every helper starts in a process group of its own, so a tool that forks (xclip and
wl-copy fork a child that serves the clipboard) can be ended together with its children,
and a timeout never leaves a forked child behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence

from voxtray.errors import VoxtrayError, first_line

_KILL_WAIT_S = 1.0


class DeliveryError(VoxtrayError):
    """Text could not be typed or pasted; the message is one line saying why."""


class ConsentNeeded(DeliveryError):
    """Typing needs a permission the user refused, withdrew or has not given; the text is
    kept (the message says where). Each front end says how it asks again."""


def typing_timeout(text: str, per_char_s: float = 0.05) -> float:
    """A generous limit for typing ``text``: a hung tool must not hang dictation."""
    return 5.0 + per_char_s * len(text)


def end_group(proc: subprocess.Popen[bytes], grace_s: float = 0.0) -> None:
    """End a helper started with ``start_new_session`` and every process of its group.

    Waits ``grace_s`` for the helper to exit by itself first; always reaps it.
    """
    if proc.poll() is None and grace_s > 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    kill_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=_KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid, signal.SIGKILL)
        proc.wait()


def kill_group(pgid: int, sig: int) -> None:
    """Signal a process group, if it still exists."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def run_tool(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | None = None,
) -> bytes:
    """Run a helper program, return its stdout, or raise a one-line DeliveryError.

    Args:
        args: The program and its arguments; never passed through a shell.
        env: The environment for the program.
        timeout: Seconds before the program (and anything it started) is killed.
        stdin: Bytes to feed it; None gives it an empty standard input.
    """
    tool = args[0]
    with _tool_errors(tool, timeout):
        proc = subprocess.Popen(
            list(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(b"" if stdin is None else stdin, timeout=timeout)
        finally:
            if proc.poll() is None:
                end_group(proc)
    if proc.returncode != 0:
        reason = first_line(err) or first_line(out)
        raise DeliveryError(f"{tool} failed: {reason or f'exit status {proc.returncode}'}")
    return out


@contextlib.contextmanager
def _tool_errors(tool: str, timeout: float) -> Iterator[None]:
    """A tool that cannot run becomes a one-line DeliveryError."""
    try:
        yield
    except FileNotFoundError as exc:
        raise DeliveryError(f"{tool} not found") from exc
    except subprocess.TimeoutExpired as exc:
        raise DeliveryError(f"{tool} did not finish within {timeout:g} s") from exc
    except OSError as exc:
        raise DeliveryError(f"cannot run {tool}: {exc.strerror or exc}") from exc


def run_daemonizing(
    args: Sequence[str], *, env: Mapping[str, str], timeout: float, stdin: bytes
) -> None:
    """Run a tool that forks a child to keep serving (xclip -i, wl-copy).

    The child inherits the parent's output descriptors, so reading them through pipes would
    wait for the child to exit; stderr goes to a file instead and is read when the parent
    fails. The tool runs in a session of its own: the serving child outlives Voxtray (it
    holds the user's clipboard), and when the tool fails or hangs, its group is killed.
    """
    tool = args[0]
    with tempfile.TemporaryFile() as errors:
        with _tool_errors(tool, timeout):
            proc = subprocess.Popen(
                list(args),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=dict(env),
                start_new_session=True,
            )
            try:
                proc.communicate(stdin, timeout=timeout)
            except BaseException:
                end_group(proc)
                raise
        if proc.returncode != 0:
            kill_group(proc.pid, signal.SIGTERM)
            errors.seek(0)
            reason = first_line(errors.read()) or f"exit status {proc.returncode}"
            raise DeliveryError(f"{tool} failed: {reason}")
