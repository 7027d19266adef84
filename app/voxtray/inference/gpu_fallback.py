"""A GPU that fails mid-session: the same audio is transcribed again on the CPU.

A provider that loaded can still fail later: CUDA runs out of memory, the driver reports an
error, the card is lost, or the output is not text (NaN scores, `<unk>` soup). The
`GpuFallbackRecognizer` then loads the model on the CPU, redoes the same audio there, so the
user gets their text, and keeps the CPU for the rest of the session: the provider is marked
broken for the process (`failed_earlier`), so a reload does not try it again either.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from voxtray.gpu.failures import FIXES, FailureKind, GpuFailure, classify, garbage
from voxtray.inference.recognizers.base import (
    INTERRUPTED,
    Interrupt,
    PrefixRecognizer,
    Recognizer,
    Transcript,
    release_idle_memory,
    transcribe_with,
    with_language,
    with_vocabulary,
)

log = logging.getLogger(__name__)

_BROKEN: dict[tuple[str, int], GpuFailure] = {}
_BROKEN_LOCK = threading.Lock()


def failed_earlier(provider: str, gpu_index: int) -> GpuFailure | None:
    """How ``provider`` on card ``gpu_index`` failed earlier in this process, if it did."""
    with _BROKEN_LOCK:
        return _BROKEN.get((provider, gpu_index))


def _mark_broken(failure: GpuFailure, gpu_index: int) -> None:
    with _BROKEN_LOCK:
        _BROKEN.setdefault((failure.provider, gpu_index), failure)


class GpuFallbackRecognizer:
    """The GPU recogniser until it fails, then the CPU one, for good.

    Args:
        gpu: The recogniser on the GPU; None when the GPU failed earlier in the session.
        make_cpu: Loads (and warms up) the same model on the CPU.
        on_failure: Told once, on the thread that transcribes, when the GPU fails.
        gpu_index: The card, for the session's record of broken providers.
        failure: Why the GPU is not used, when ``gpu`` is None.
    """

    def __init__(
        self,
        gpu: Recognizer | None,
        make_cpu: Callable[[], Recognizer],
        on_failure: Callable[[GpuFailure], None] | None = None,
        *,
        gpu_index: int = 0,
        failure: GpuFailure | None = None,
    ) -> None:
        self._gpu = gpu
        self._make_cpu = make_cpu
        self._cpu: Recognizer | None = None
        self._on_failure = on_failure
        self._gpu_index = gpu_index
        self.failure = failure
        first = gpu if gpu is not None else self._cpu_recognizer()
        self.engine, self.model = first.engine, first.model
        self.takes_prefix = isinstance(first, PrefixRecognizer) and first.takes_prefix

    @property
    def current(self) -> Recognizer:
        return self._gpu if self._gpu is not None else self._cpu_recognizer()

    @property
    def provider(self) -> str:
        return self.current.provider

    @property
    def fallback(self) -> str | None:
        """Why the GPU is not used (one line), or None while it is."""
        return None if self.failure is None else self.failure.line()

    def _cpu_recognizer(self) -> Recognizer:
        if self._cpu is None:
            self._cpu = self._make_cpu()
        return self._cpu

    def warmup(self) -> None:
        if self._gpu is None:
            self.current.warmup()
            return
        try:
            self._gpu.warmup()
        except Exception as exc:  # whatever the GPU raised, the CPU takes over
            self._fail(classify(exc, self._gpu.provider))

    def transcribe(
        self,
        audio: NDArray[np.float32],
        *,
        prefix: Sequence[int] = (),
        check_prefix: bool = False,
        interrupt: Interrupt | None = None,
    ) -> Transcript:
        gpu = self._gpu
        if gpu is not None:
            try:
                transcript = transcribe_with(
                    gpu, audio, prefix=prefix, check_prefix=check_prefix, interrupt=interrupt
                )
            except Exception as exc:  # whatever the GPU raised, the CPU takes over
                if interrupt is not None and interrupt.is_set():
                    raise  # stopped on purpose, not a failure
                self._fail(classify(exc, gpu.provider))
            else:
                return self._checked(transcript, audio, gpu.provider, prefix, interrupt)
        return transcribe_with(
            self.current, audio, prefix=prefix, check_prefix=check_prefix, interrupt=interrupt
        )

    def _checked(
        self,
        transcript: Transcript,
        audio: NDArray[np.float32],
        provider: str,
        prefix: Sequence[int],
        interrupt: Interrupt | None,
    ) -> Transcript:
        """The GPU's transcript, or the CPU's where the GPU's is garbage and the CPU's not."""
        why = garbage(transcript.text)
        if why is None or INTERRUPTED in transcript.guards:
            return transcript
        again = transcribe_with(self._cpu_recognizer(), audio, prefix=prefix, interrupt=interrupt)
        if garbage(again.text) is not None:
            return transcript  # the model says so on the CPU too: not the GPU's doing
        kind = FailureKind.BROKEN_OUTPUT
        self._fail(GpuFailure(kind, provider, f"output that cannot be text: {why}", FIXES[kind]))
        return again

    def _fail(self, failure: GpuFailure) -> None:
        log.warning("the GPU failed, going on on the CPU: %s", failure.cause)
        self.failure = failure
        _mark_broken(failure, self._gpu_index)
        self._gpu = None  # its sessions and their GPU memory go with it
        cpu = self._cpu_recognizer()
        self.engine, self.model = cpu.engine, cpu.model
        if self._on_failure is not None:
            self._on_failure(failure)

    def release_idle_memory(self) -> bool:
        return release_idle_memory(self.current)

    def with_language(self, language: str) -> Recognizer:
        """The same, transcribing ``language``; a failure it meets moves this recogniser to
        the CPU too."""
        if self._gpu is None:
            return with_language(self.current, language)
        return GpuFallbackRecognizer(
            with_language(self._gpu, language),
            lambda: with_language(self._cpu_recognizer(), language),
            self._fail,
            gpu_index=self._gpu_index,
        )

    def with_vocabulary(self, vocabulary: tuple[str, ...]) -> Recognizer:
        """The same, favouring ``vocabulary`` (a server request's); a failure it meets moves
        this recogniser to the CPU too."""
        if self._gpu is None:
            return with_vocabulary(self.current, vocabulary)
        return GpuFallbackRecognizer(
            with_vocabulary(self._gpu, vocabulary),
            lambda: with_vocabulary(self._cpu_recognizer(), vocabulary),
            self._fail,
            gpu_index=self._gpu_index,
        )
