"""Capture what C and C++ libraries write to the process's standard error, and read from
onnxruntime's and sherpa-onnx's lines why a provider was not used.

onnxruntime and sherpa-onnx report a provider that failed to load only through their native
loggers, which write to file descriptor 2 and never reach Python's `sys.stderr` object.
Redirecting the descriptor itself is the only way to read those lines.

File descriptor 2 belongs to the whole process: while a capture is open, every thread's
writes to it land in the capture; when it closes, the lines that are not the native
libraries' own (another thread's warning or traceback) are written back to the real
standard error, so nothing else is lost. Captures are serialised by a module lock so two threads
cannot swap the descriptor under each other; the lock is re-entrant, so a capture nested in
the same thread works (the inner one takes the text written inside it). On Windows only
writes through the C runtime's descriptor 2 are caught, not those to the raw console handle.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

from voxtray.gpu.builds import CPU, CUDA
from voxtray.gpu.cuda_setup import pip_package
from voxtray.gpu.fixes import (
    ALL_CUDA_LIBRARIES,
    SHERPA_FIX,
    cpu_only_fix,
    driver_fix,
    is_provider_library,
    library_fix,
    mismatch_fix,
    provider_library_fix,
)

_STDOUT_FD = 1
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


def _flush_python_stdout() -> None:
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stdout.flush()


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send what is written to standard output inside the block to standard error.

    Both file descriptor 1 (native libraries) and Python's `sys.stdout` (onnxruntime prints
    "EP Error ... Falling back" with `print`) are redirected, so stdout keeps carrying only
    results (`--json`). Like descriptor 2, they belong to the whole process: another
    thread's prints inside the block go to stderr too.
    """
    with _lock, _descriptor_2_writer() as errors:
        _flush_python_stdout()
        try:
            saved: int | None = os.dup(_STDOUT_FD)
        except OSError:  # no descriptor 1 at all
            saved = None
        if saved is not None:
            os.dup2(_STDERR_FD, _STDOUT_FD)
        try:
            with contextlib.redirect_stdout(errors):
                yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                errors.flush()
            if saved is not None:
                os.dup2(saved, _STDOUT_FD)
                os.close(saved)


@contextmanager
def _descriptor_2_writer() -> Iterator[TextIO]:
    # Python's prints go straight to descriptor 2, so a capture around the block takes
    # them wherever sys.stderr points.
    try:
        os.fstat(_STDERR_FD)
    except OSError:  # no descriptor 2 at all
        yield sys.stderr
        return
    with open(_STDERR_FD, "w", encoding="utf-8", errors="backslashreplace", closefd=False) as out:
        yield out


@contextmanager
def capture_native_stderr() -> Iterator[NativeCapture]:
    """Redirect file descriptor 2 into a temporary file while the block runs.

    A file rather than a pipe: a pipe fills up after 64 KiB and would block a chatty
    library (onnxruntime's verbose log runs to megabytes) with nothing reading it.

    What is written to standard output inside the block is captured too (see
    `stdout_to_stderr`): libraries print their fallback banners there.

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
            with stdout_to_stderr():
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
            if saved is not None:  # with no descriptor 2 before, there is nowhere to echo
                _echo_foreign_lines(captured.text)


def _echo_foreign_lines(text: str) -> None:
    foreign = [line for line in text.splitlines(keepends=True) if not _is_native(line)]
    data = "".join(foreign).encode("utf-8", errors="replace")
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(_STDERR_FD, data) :]


@dataclass(frozen=True)
class Finding:
    """A cause read from a log line, with its fix; `generic` ones yield to precise ones."""

    cause: str
    fix: str | None
    provider: str | None = None
    generic: bool = False


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ ")
_RELEVANT = re.compile(
    r"\[[EW]:|EP Error|Falling back|ExecutionProvider|Failed to|cannot open|LoadLibrary|"
    r"CUDA|cuDNN|CUDNN|TensorRT|SHERPA_ONNX_ENABLE_GPU"
)
_MISSING = re.compile(
    r"Failed to load library (\S+?) with error: (\S+?): cannot open shared object"
)
_SYMBOL = re.compile(
    r"Failed to load library (\S+?) with error: .*"
    r"(undefined symbol: \S+|version `[^']+' not found)"
)
_LOADLIBRARY = re.compile(
    r'LoadLibrary failed with error (\d+) "[^"]*" when trying to load "([^"]+)"'
)
_CUDA_ERROR = re.compile(r"CUDA (?:failure|error) (\w+) ?: ?([^;\n]+)")
_REQUIRE = re.compile(
    r"Failed to create (\w+)ExecutionProvider\. Require cuDNN (\S+) and CUDA (\S+?)\.?\s"
)


_BANNER = re.compile(r"^\*+(?: EP Error \*+)?$")


def _is_native(line: str) -> bool:
    """A line of onnxruntime's or sherpa-onnx's own log, or their banners."""
    plain = _ANSI.sub("", line).strip()
    return (
        not plain
        or _TIMESTAMP.match(plain) is not None
        or _BANNER.match(plain) is not None
        or _RELEVANT.search(plain) is not None
    )


def relevant_lines(text: str) -> list[str]:
    """The lines of a native log that bear on providers, without colours or timestamps."""
    lines = (_TIMESTAMP.sub("", _ANSI.sub("", line)).strip() for line in text.splitlines())
    return [line for line in lines if line and _RELEVANT.search(line)]


def _provider_of(library_path: str) -> str | None:
    name = os.path.basename(library_path).lower()
    if "tensorrt" in name:
        return "TensorRT"
    return "CUDA" if "cuda" in name else None


def _missing_finding(library: str, provider: str | None, cuda_major: int | None) -> Finding:
    if is_provider_library(library):
        cause = f"the {provider or 'GPU'} provider is not installed: {library} is missing"
        return Finding(cause, provider_library_fix(), provider)
    package = pip_package(library, cuda_major)
    if package is None:
        return Finding(f"no NVIDIA driver: {library} is missing", driver_fix(cuda_major), provider)
    if package.startswith("tensorrt"):
        return Finding(
            f"TensorRT not installed: {library} is missing",
            library_fix(library, cuda_major),
            provider,
        )
    cause = f"missing {library} (the {provider or 'GPU'} provider cannot load)"
    return Finding(cause, library_fix(library, cuda_major), provider)


def _cuda_error_finding(code: str, message: str, cuda_major: int | None) -> Finding:
    text = message.strip()
    if code in ("100", "cudaErrorNoDevice") or "no CUDA-capable device" in text:
        return Finding("no CUDA-capable GPU", "run on a machine with an NVIDIA GPU", "CUDA")
    if code in ("35", "cudaErrorInsufficientDriver") or "insufficient" in text:
        return Finding(
            f"NVIDIA driver too old for CUDA {cuda_major or ''}".strip(),
            driver_fix(cuda_major),
            "CUDA",
        )
    return Finding(f"CUDA error {code}: {text}", None, "CUDA")


def _line_finding(line: str, cuda_major: int | None) -> Finding | None:
    """The cause one log line states, if any."""
    if match := _MISSING.search(line):
        return _missing_finding(match.group(2), _provider_of(match.group(1)), cuda_major)
    if match := _SYMBOL.search(line):
        cause = f"CUDA/cuDNN version mismatch: {match.group(2)}"
        return Finding(cause, mismatch_fix(f"{cuda_major}.x", "9.x"), _provider_of(match.group(1)))
    if match := _LOADLIBRARY.search(line):
        provider = _provider_of(match.group(2))
        library = os.path.basename(match.group(2))
        cause = f"a DLL that {library} needs is missing (LoadLibrary error {match.group(1)})"
        return Finding(cause, f"{ALL_CUDA_LIBRARIES} and {driver_fix(cuda_major)}", provider)
    if match := _CUDA_ERROR.search(line):
        return _cuda_error_finding(match.group(1), match.group(2), cuda_major)
    if "CUDNN_STATUS_VERSION_MISMATCH" in line:
        return Finding(
            "CUDA/cuDNN version mismatch: cuDNN", mismatch_fix(f"{cuda_major}.x", "9.x"), "CUDA"
        )
    if match := _REQUIRE.search(line):
        provider, cudnn, cuda = match.groups()
        cause = (
            f"CUDA/cuDNN version mismatch: the {provider} provider needs CUDA {cuda} "
            f"and cuDNN {cudnn}"
        )
        return Finding(cause, mismatch_fix(cuda, cudnn), provider, generic=True)
    if "Please install TensorRT libraries" in line:
        return Finding(
            "TensorRT libraries not found",
            library_fix("libnvinfer.so.10", cuda_major),
            "TensorRT",
            True,
        )
    if "SHERPA_ONNX_ENABLE_GPU" in line:
        return Finding("CPU-only sherpa-onnx build", SHERPA_FIX, "sherpa-onnx")
    return None


def _not_built(provider: str) -> Finding:
    short = provider.removesuffix("ExecutionProvider")
    if provider == CUDA:
        cause = f"CPU-only onnxruntime build: {provider} is not compiled in"
        return Finding(cause, cpu_only_fix(), short)
    return Finding(f"this onnxruntime build has no {provider}", cpu_only_fix(), short)


def parse_provider_log(
    lines: Sequence[str],
    requested: Sequence[str],
    available: Sequence[str],
    cuda_major: int | None = None,
) -> list[Finding]:
    """The causes onnxruntime (or sherpa-onnx) logged for not using a requested provider.

    Args:
        lines: Log lines, e.g. from `relevant_lines`.
        requested: The providers the session was asked for, in order.
        available: `onnxruntime.get_available_providers()`.
        cuda_major: The CUDA major onnxruntime was built for, to name the right packages.

    Returns:
        Distinct findings in the order they happened. onnxruntime's catch-all "Require cuDNN
        9.* and CUDA 13.*" counts as a version mismatch only when nothing more precise was
        logged for the same provider.
    """
    findings = [_not_built(name) for name in requested if name != CPU and name not in available]
    findings += [f for f in (_line_finding(line, cuda_major) for line in lines) if f is not None]
    precise = {f.provider for f in findings if not f.generic}
    kept: dict[str, Finding] = {}
    for finding in findings:
        if not (finding.generic and finding.provider in precise):
            kept.setdefault(finding.cause, finding)
    return list(kept.values())


_PLACED = re.compile(r"(All nodes|Node\(s\)) placed on \[(\w+)\]\. Number of nodes: (\d+)")
_NODE = re.compile(r"VerifyEachNodeIsAssignedToAnEp\]\s{3,}(\w+)")


def parse_node_placement(lines: Sequence[str]) -> tuple[dict[str, list[str]], str | None]:
    """Op types per provider from onnxruntime's verbose "Node placements" report.

    Returns:
        The sorted op types per provider when nodes were split between providers, and the
        provider's name when onnxruntime said "All nodes placed on [X]" (it then lists none).
    """
    placement: dict[str, set[str]] = {}
    single: str | None = None
    current: str | None = None
    for line in lines:
        if match := _PLACED.search(line):
            current = match.group(2)
            placement.setdefault(current, set())
            single = current if match.group(1) == "All nodes" else None
        elif (match := _NODE.search(line)) and current is not None:
            placement[current].add(match.group(1))
        else:
            current = None
    return {name: sorted(ops) for name, ops in placement.items()}, single
