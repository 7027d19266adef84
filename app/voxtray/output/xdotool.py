"""Type through xdotool on X11 (XTEST key events, which every X application accepts).

An ``xdotool -`` process reads a delivery's commands from its standard input (never its
command line, which every local user can read): each piece of text is a ``key`` command
naming the characters' keysyms, followed by ``getmouselocation``, whose one-line answer
says the keys were sent, so the target can be checked before the next piece. Starting a
process per piece would cost tens of milliseconds each; xdotool reads the keyboard map
only when it starts, so a new one starts after each change of the bindings (see binder).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping

from voxtray.choices import OutputMethod, PasteChord
from voxtray.desktop import xlib
from voxtray.errors import first_line
from voxtray.output import binder, modifiers
from voxtray.output.base import (
    CHORD_NAMES,
    Delivery,
    DeliveryError,
    FocusTarget,
    OutputBase,
    check_key,
    run_tool,
    typing_timeout,
)
from voxtray.output.tools import end_group

log = logging.getLogger(__name__)

# xdotool's own per-key delay, enough for it to bind and unbind each character in turn
# when the spare keycodes ran out (see binder); at 0 ms such characters come out wrong.
_FALLBACK_DELAY_MS = 12
# Keys per command: xdotool reads its script a line at a time.
_KEYS_PER_COMMAND = 64
_CONTROL_KEYS = {"\n": "Return", "\r": "Return", "\t": "Tab", "\b": "BackSpace"}


def key_name(char: str) -> str | None:
    """The keysym name xdotool's ``key`` takes for a character; None for one it skips."""
    if xlib.is_control(char):
        return _CONTROL_KEYS.get(char)
    return f"U{ord(char):04X}"


class _Script:
    """``xdotool -`` processes that run one command at a time and say when it is done.

    A process starts on the first command after `restart`, so it reads the keyboard map
    as it is then. ``--clearmodifiers`` (about 17 ms a command) is asked for only while
    ``held`` reports a modifier down; without ``held`` always.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._current: _ScriptProcess | None = None
        self.held: Callable[[], frozenset[str]] | None = None

    def __enter__(self) -> _Script:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.restart()

    def restart(self) -> None:
        """End the running process; the next command starts a new one."""
        if self._current is not None:
            current, self._current = self._current, None
            current.close()

    def keys(self, text: str, bound: bool) -> None:
        """Press the keys that type ``text``."""
        delay = 0 if bound else _FALLBACK_DELAY_MS
        names = [name for name in map(key_name, text) if name]
        for start in range(0, len(names), _KEYS_PER_COMMAND):
            batch = names[start : start + _KEYS_PER_COMMAND]
            timeout = typing_timeout("x" * len(batch), 0.01 + delay / 1000)
            clear = " --clearmodifiers" if self.held is None or self.held() else ""
            command = f"key{clear} --delay {delay} {' '.join(batch)}"
            if self._current is None:
                self._current = _ScriptProcess(self._env)
            self._current.run(command, timeout)


class _ScriptProcess:
    """One ``xdotool -`` process."""

    def __init__(self, env: Mapping[str, str]) -> None:
        # Closed by close(): the file outlives this method.
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._proc = subprocess.Popen(
                ["xdotool", "-"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                env=dict(env),
                start_new_session=True,
            )
        except OSError as exc:
            self._errors.close()
            if isinstance(exc, FileNotFoundError):
                raise DeliveryError("xdotool not found") from exc
            raise DeliveryError(f"cannot run xdotool: {exc.strerror or exc}") from exc
        self._pending = b""

    def run(self, command: str, timeout: float) -> None:
        """Run one command; return once xdotool has done it."""
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None
        assert stdout is not None
        try:
            stdin.write(f"{command}\ngetmouselocation\n".encode())
            stdin.flush()
        except OSError as exc:
            raise DeliveryError(f"xdotool failed: {self._reason()}") from exc
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeliveryError(f"xdotool did not finish within {timeout:g} s")
            if select.select([stdout], [], [], left)[0]:
                chunk = os.read(stdout.fileno(), 4096)
                if not chunk:
                    raise DeliveryError(f"xdotool failed: {self._reason()}")
                self._pending += chunk
        self._pending = self._pending.split(b"\n", 1)[1]

    def _reason(self) -> str:
        self._proc.poll()
        self._errors.seek(0)
        return first_line(self._errors.read()) or f"exit status {self._proc.returncode}"

    def close(self) -> None:
        """Let xdotool finish reading, then end it and reap it."""
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        end_group(self._proc, grace_s=1.0)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._errors.close()


class XdotoolOutput(OutputBase):
    """``xdotool type --clearmodifiers --delay 0``, non-ASCII bound beforehand."""

    name = OutputMethod.XDOTOOL

    def problem(self) -> str | None:
        if not self.session.x11_display:
            return "xdotool needs an X11 session (DISPLAY is not set)"
        if shutil.which("xdotool", path=self.env.get("PATH")) is None:
            return "xdotool not found: sudo apt-get install xdotool"
        return None

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        text = text.replace("\r\n", "\n")
        with _Script(self.tool_env()) as script:
            try:
                display = xlib.XDisplay(self.session.x11_display)
            except OSError as exc:
                log.debug("typing without keymap preparation: %s", exc)
                return self.type_chunks(text, target, lambda piece: script.keys(piece, False))
            with display:
                held = modifiers.x11_probe(display)
                modifiers.wait_until_released(held)
                # Still-held modifiers are released and restored by --clearmodifiers.
                script.held = held
                return self._type_bound(display, script, text, target)

    def _type_bound(
        self, display: xlib.XDisplay, script: _Script, text: str, target: FocusTarget
    ) -> Delivery:
        with binder.binder_for(self.session.x11_display).session(display) as session:
            present = {xlib.keysym_char(sym) for sym in session.foreign_keysyms(2)}
            keys = [
                None if char in present or xlib.is_control(char) else xlib.char_keysym(char)
                for char in text
            ]
            cursor = binder.Cursor(
                session,
                keys,
                lambda start, end, bound: script.keys(text[start:end], bound),
                on_bound=script.restart,
            )
            return self.type_chunks(text, target, lambda piece: cursor.type_next(len(piece)))

    def press_paste(self, chord: PasteChord = PasteChord.CTRL_V) -> None:
        """Press ``chord`` once the user's modifiers are up (or lifted, after the wait)."""
        self._press([CHORD_NAMES[chord]], timeout=5)

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times once the user's modifiers are up."""
        check_key(name, count)
        args = ["--delay", "0", "--repeat", str(count), "--repeat-delay", "1", name]
        self._press(args, timeout=typing_timeout("x" * count, 0.01))

    def _press(self, args: list[str], timeout: float) -> None:
        self._require()
        try:
            with xlib.XDisplay(self.session.x11_display) as display:
                modifiers.wait_until_released(modifiers.x11_probe(display))
        except OSError as exc:
            log.debug("pressing keys without waiting for modifiers: %s", exc)
        run_tool(
            ["xdotool", "key", "--clearmodifiers", *args], env=self.tool_env(), timeout=timeout
        )
