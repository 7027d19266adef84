"""What every text output offers, the error it raises, and helpers shared by the backends.

A backend is cheap to construct and never fails doing so: whether it can work is asked with
``available()`` (and ``problem()`` says why not, with the fix), so the chooser and the
diagnostics page can probe every backend without side effects.
"""

from __future__ import annotations

import abc
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from app.choices import OutputMethod
from app.desktop.session import DesktopSession
from app.errors import VoxtrayError, first_line

# Tools read UTF-8 text through the C library's multibyte functions (xdotool, wtype), which
# only decode non-ASCII under a UTF-8 locale; C.UTF-8 exists on every current glibc.
_UTF8_LOCALE = "C.UTF-8"


class DeliveryError(VoxtrayError):
    """Text could not be typed or pasted; the message is one line saying why."""


@runtime_checkable
class TextOutput(Protocol):
    """Something that puts text into the focused window.

    Attributes:
        name: The setting value that names it.
    """

    name: OutputMethod

    def available(self) -> bool:
        """Whether this backend can work on this desktop right now."""
        ...

    def problem(self) -> str | None:
        """Why the backend cannot work, with what to install or start; None if it can."""
        ...

    def deliver(self, text: str) -> None:
        """Type ``text`` into the focused window.

        Raises:
            DeliveryError: The text could not be delivered; the message says why.
        """
        ...


@runtime_checkable
class PasteKeys(Protocol):
    """Something that presses ctrl+v in the focused window, for the clipboard backend."""

    name: OutputMethod

    def problem(self) -> str | None:
        """Why it cannot press keys here, with the fix; None if it can."""
        ...

    def press_paste(self) -> None:
        """Press ctrl+v once the user's modifiers are up.

        Raises:
            DeliveryError: The keys could not be pressed; the message says why.
        """
        ...


class OutputBase(abc.ABC):
    """Shared plumbing: the environment, platform and session a backend judges."""

    name: OutputMethod

    def __init__(self, env: Mapping[str, str] | None = None, platform: str | None = None) -> None:
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.platform = sys.platform if platform is None else platform
        self.session = DesktopSession.from_env(self.env, self.platform)

    def available(self) -> bool:
        return self.problem() is None

    @abc.abstractmethod
    def problem(self) -> str | None:
        """Why the backend cannot work, with the fix; None if it can."""

    @abc.abstractmethod
    def deliver(self, text: str) -> None:
        """Type ``text`` into the focused window, or raise DeliveryError."""

    def _require(self) -> None:
        reason = self.problem()
        if reason is not None:
            raise DeliveryError(reason)

    def tool_env(self) -> dict[str, str]:
        """The environment for a helper process: ours, with a UTF-8 character locale."""
        env = dict(self.env)
        env["LC_ALL"] = _UTF8_LOCALE
        return env

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {str(self.name)!r}>"


def typing_timeout(text: str, per_char_s: float = 0.05) -> float:
    """A generous limit for typing ``text``: a hung tool must not hang dictation."""
    return 5.0 + per_char_s * len(text)


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
        timeout: Seconds before the program is killed.
        stdin: Bytes to feed it; None gives it an empty standard input.
    """
    tool = args[0]
    with _tool_errors(tool, timeout):
        result = subprocess.run(
            list(args),
            input=b"" if stdin is None else stdin,
            capture_output=True,
            env=dict(env),
            timeout=timeout,
            check=False,
        )
    if result.returncode != 0:
        reason = first_line(result.stderr) or first_line(result.stdout)
        raise DeliveryError(f"{tool} failed: {reason or f'exit status {result.returncode}'}")
    return result.stdout


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
    fails.
    """
    tool = args[0]
    with tempfile.TemporaryFile() as errors:
        with _tool_errors(tool, timeout):
            result = subprocess.run(
                list(args),
                input=stdin,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=dict(env),
                timeout=timeout,
                check=False,
            )
        if result.returncode != 0:
            errors.seek(0)
            reason = first_line(errors.read()) or f"exit status {result.returncode}"
            raise DeliveryError(f"{tool} failed: {reason}")
