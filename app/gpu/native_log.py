"""Capture what C and C++ libraries write to the process's standard error.

onnxruntime and sherpa-onnx report a provider that failed to load only through their native
loggers, which write to file descriptor 2 and never reach Python's `sys.stderr` object.
Redirecting the descriptor itself is the only way to read those lines.

File descriptor 2 belongs to the whole process: while a capture is open, every thread's
writes to it land in the capture. Captures are serialised by a module lock so two threads
cannot swap the descriptor under each other; the lock is re-entrant, so a capture nested in
the same thread works (the inner one takes the text written inside it). On Windows only
writes through the C runtime's descriptor 2 are caught, not those to the raw console handle.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

_STDERR_FD = 2
_lock = threading.RLock()


@dataclass
class NativeCapture:
    """The text written to file descriptor 2 inside the block; filled in when it exits."""

    text: str = ""


def _flush_python_stderr() -> None:
    # Python buffers sys.stderr; flushing it before each switch keeps its writes on the
    # side of the switch where they were made.
    # sys.stderr is None under pythonw, or may be closed already.
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()


@contextmanager
def capture_native_stderr() -> Iterator[NativeCapture]:
    """Redirect file descriptor 2 into a temporary file while the block runs.

    A file rather than a pipe: a pipe fills up after 64 KiB and would block a chatty
    library (onnxruntime's verbose log runs to megabytes) with nothing reading it.

    Yields:
        A `NativeCapture` whose `text` holds what was written once the block has exited,
        also when it exits by an exception. The original descriptor 2 is always restored.
    """
    captured = NativeCapture()
    with _lock, tempfile.TemporaryFile() as sink:
        _flush_python_stderr()
        try:
            saved: int | None = os.dup(_STDERR_FD)
        except OSError:  # no descriptor 2 at all (a windowed Windows process)
            saved = None
        os.dup2(sink.fileno(), _STDERR_FD)
        try:
            yield captured
        finally:
            _flush_python_stderr()
            if saved is None:
                os.close(_STDERR_FD)
            else:
                os.dup2(saved, _STDERR_FD)
                os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode("utf-8", errors="replace")
