"""Whisper's encoder on its session: log-mel features in, cross-attention K/V out, in runs
that hand the CPU arena back and that an interrupt can stop."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.audio.features import CHUNK_FRAMES, HOP_LENGTH, log_mel_spectrogram
from voxtray.inference.recognizers.base import Interrupt
from voxtray.inference.recognizers.ort_sessions import provider_label
from voxtray.inference.recognizers.whisper_vocab import WhisperVocab

# The encoder's input length changes with nearly every utterance, and each new length made
# the CPU arena take a region it kept: RSS grew for hundreds of utterances. Shrinking the
# arena at the end of each encoder run hands those regions back to the C heap, which the
# pipeline trims after the utterance (docs/reliability.md, "Memory"). Running the encoder
# without an arena holds memory lower still but costs ~25 % encoder time; the decoder
# keeps its arena as it is: it allocates per token.
_SHRINK_CPU_ARENA = ("memory.enable_memory_arena_shrinkage", "cpu:0")

CrossKV = tuple[NDArray[np.float32], NDArray[np.float32]]
"""The encoder's output: every decoder layer's cross-attention keys and values."""


def features(
    audio: NDArray[np.float32], tail_padding_s: float, *, full_window: bool = False
) -> NDArray[np.float32]:
    """The encoder's input: log-mel frames of `audio` with `tail_padding_s` of silence
    after it, or with padding enough that the input is cut at Whisper's 30 s window."""
    padding = CHUNK_FRAMES * HOP_LENGTH if full_window else int(tail_padding_s * SAMPLE_RATE)
    mel = log_mel_spectrogram(audio, padding=padding)[:, :CHUNK_FRAMES]
    frames = mel.shape[1] - mel.shape[1] % 2  # the strided conv halves an even length
    return np.ascontiguousarray(mel[None, :, :frames])


class WhisperEncoder:
    """Whisper's encoder session and the run options it goes with."""

    def __init__(self, session: Any, vocab: WhisperVocab) -> None:
        import onnxruntime as ort

        self.session = session
        self.vocab = vocab
        self.run_options = ort.RunOptions()
        """Every encoder run's options: on the CPU, they shrink the arena at the end."""
        # Other providers' arenas are their own to manage.
        self.shrinks_arena = provider_label(session) == "cpu"
        if self.shrinks_arena:
            self.run_options.add_run_config_entry(*_SHRINK_CPU_ARENA)

    def encode(self, mel: NDArray[np.float32], interrupt: Interrupt | None) -> CrossKV | None:
        """Cross-attention K/V; None when `interrupt` stopped the encoder."""
        if interrupt is None:
            return self._run(mel, self.run_options)
        options = self._fresh_options()
        if self.shrinks_arena:
            options.add_run_config_entry(*_SHRINK_CPU_ARENA)
        with interrupt.hooked(lambda: setattr(options, "terminate", True)):
            try:
                return self._run(mel, options)
            except Exception:  # onnxruntime's Fail when terminated
                if interrupt.is_set():
                    return None
                raise

    def idle_run(self) -> CrossKV:
        """A run on one frame of silence, its outputs in arrays of our own: it leaves the
        arena holding nothing of it."""
        n_mels = self.session.get_inputs()[0].shape[1]
        mel = np.zeros((1, n_mels if isinstance(n_mels, int) else 80, 2), np.float32)
        return self._run(mel, self.run_options, own_outputs=True)

    def _fresh_options(self) -> Any:
        import onnxruntime as ort

        return ort.RunOptions()

    def _run(self, mel: NDArray[np.float32], options: Any, *, own_outputs: bool = False) -> CrossKV:
        if not own_outputs:
            cross_k, cross_v = self.session.run(None, {"mel": mel}, options)
            return cross_k, cross_v
        # Outputs in arrays of our own leave nothing of this run in the arena.
        vocab = self.vocab
        shape = (vocab.n_text_layer, mel.shape[0], mel.shape[2] // 2, vocab.n_text_state)
        cross = np.empty((2, *shape), np.float32)
        binding = self.session.io_binding()
        binding.bind_cpu_input("mel", mel)
        for output, array in zip(self.session.get_outputs(), cross, strict=True):
            binding.bind_output(output.name, "cpu", 0, np.float32, shape, array.ctypes.data)
        self.session.run_with_iobinding(binding, options)
        return cross[0], cross[1]
