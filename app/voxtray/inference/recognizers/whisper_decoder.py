"""Greedy Whisper decoding on the decoder session: the prompt, language detection, and the
token loop with its suppression, vocabulary biasing, forced prefix, token cap and loop
guard."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.gpu.failures import BrokenOutput
from voxtray.inference.recognizers.base import INTERRUPTED, Interrupt
from voxtray.inference.recognizers.biasing import BiasedChoice, VocabularyTrie
from voxtray.inference.recognizers.logits import logsumexp, runaway_tail, softmax_at
from voxtray.inference.recognizers.whisper_vocab import WhisperVocab
from voxtray.inference.textguards import KEPT_COPIES, RUNAWAY_REPEATS
from voxtray.text.languages import ENGLISH

CAPPED = "token-cap"
"""Guard: decoding stopped at the most tokens the audio's length allows (a loop, mostly)."""

Decoded = tuple[list[int], float, float, list[str]]
"""Text tokens (forced ones first), mean log-probability of the new ones, no-speech
probability and the guards that fired."""


class WhisperDecoder:
    """Whisper's decoder session and the rules for choosing its tokens."""

    def __init__(
        self, session: Any, vocab: WhisperVocab, *, suppress_non_speech: bool, suppress_blank: bool
    ) -> None:
        self.session = session
        self.vocab = vocab
        self._suppress_blank = suppress_blank
        ids = set(vocab.non_speech) if suppress_non_speech else set()
        # Every special token but end-of-text: timestamps, task and language tokens.
        n_vocab = int(session.get_outputs()[0].shape[2])
        ids.update(range(vocab.eot + 1, n_vocab))
        self._suppress = np.array(sorted(ids), dtype=np.int64)

    def _empty_cache(self) -> NDArray[np.float32]:
        vocab = self.vocab
        shape = (vocab.n_text_layer, 1, vocab.n_text_ctx, vocab.n_text_state)
        return np.zeros(shape, dtype=np.float32)

    def _first_logits(
        self,
        tokens: list[int],
        cross_k: NDArray[np.float32],
        cross_v: NDArray[np.float32],
        run_options: Any = None,
    ) -> NDArray[np.float32]:
        cache = self._empty_cache()
        logits: NDArray[np.float32] = self.session.run(
            [self.session.get_outputs()[0].name],
            {
                "tokens": np.array([tokens], dtype=np.int64),
                "in_n_layer_self_k_cache": cache,
                "in_n_layer_self_v_cache": cache,
                "n_layer_cross_k": cross_k,
                "n_layer_cross_v": cross_v,
                "offset": np.array([0], dtype=np.int64),
            },
            run_options,
        )[0]
        return logits

    def idle_step(
        self, cross_k: NDArray[np.float32], cross_v: NDArray[np.float32], run_options: Any
    ) -> None:
        """One step on end-of-text alone, run with `run_options` (one that shrinks the CPU
        arena): it leaves the arena holding next to nothing."""
        self._first_logits([self.vocab.eot], cross_k, cross_v, run_options)

    def prompt(self, previous: list[int], language: str) -> list[int]:
        """The decoder's first input: `previous` (`<|startofprev|>` and the initial
        prompt's tokens, or nothing), then the start-of-transcript sequence in `language`."""
        prompt = list(self.vocab.sot_sequence)
        if len(prompt) >= 2 and language in self.vocab.languages:
            prompt[1] = self.vocab.languages[language]
        return [*previous, *prompt, self.vocab.no_timestamps]

    def detect_language(
        self, cross_k: NDArray[np.float32], cross_v: NDArray[np.float32]
    ) -> str | None:
        """Whisper's language detection: the decoder's first step after
        `<|startoftranscript|>` alone, its most likely language token."""
        vocab = self.vocab
        logits = self._first_logits(vocab.sot_sequence[:1], cross_k, cross_v)
        codes = [code for code, token in vocab.languages.items() if token < logits.shape[-1]]
        if not codes:
            return None
        scores = logits[0, -1, [vocab.languages[code] for code in codes]]
        return codes[int(scores.argmax())]

    def decode(
        self,
        cross_k: NDArray[np.float32],
        cross_v: NDArray[np.float32],
        n_samples: int,
        previous: list[int],
        forced: Sequence[int] = (),
        check_forced: bool = False,
        interrupt: Interrupt | None = None,
        language: str = ENGLISH,
        trie: VocabularyTrie | None = None,
        bonus: float = 0.0,
    ) -> Decoded:
        """Greedy decoding after `previous` (the initial prompt, or nothing) and the
        `forced` tokens, which go in with the prompt in one
        step (with `check_forced`, only as far as greedy decoding would have chosen them).
        With a `trie`, its entries are favoured by `bonus` (`BiasedChoice`)."""
        vocab = self.vocab
        k_cache, v_cache = self._empty_cache(), self._empty_cache()
        # Whisper says at most ~5 tokens a second; the cap stops a runaway loop early.
        max_tokens = min(vocab.n_text_ctx // 2, 12 + int(n_samples / SAMPLE_RATE * 8))
        prompt = self.prompt(previous, language)
        sot_index = len(previous)  # where Whisper reads the no-speech probability
        sampled: list[int] = list(forced[:max_tokens])
        fed, offset = prompt + sampled, 0
        logprobs: list[float] = []  # per token of `sampled`; forced ones count 0
        no_speech_prob = 0.0
        guards: list[str] = []
        biased: BiasedChoice | None = None
        # A take-back decodes again from an earlier token: room for a few.
        for step in range(2 * max_tokens + 1):
            if interrupt is not None and interrupt.is_set():
                guards.append(INTERRUPTED)
                break
            logits, k_cache, v_cache = self.session.run(
                None,
                {
                    "tokens": np.array([fed], dtype=np.int64),
                    "in_n_layer_self_k_cache": k_cache,
                    "in_n_layer_self_v_cache": v_cache,
                    "n_layer_cross_k": cross_k,
                    "n_layer_cross_v": cross_v,
                    "offset": np.array([offset], dtype=np.int64),
                },
            )
            position = -1
            if step == 0:
                no_speech_prob = softmax_at(logits[0, sot_index], vocab.no_speech)
                kept = self._agreed(logits[0], len(prompt), sampled) if check_forced else None
                if kept is not None and kept < len(sampled):
                    # Positions past `offset` are never read, so the cache needs no undo.
                    del sampled[kept:]
                    position = len(prompt) - 1 + kept
                    guards.append("prefix-cut")
                logprobs = [0.0] * len(sampled)
                if trie:
                    biased = BiasedChoice(trie, bonus, sampled)
            if not np.isfinite(logits[0, position]).all():
                raise BrokenOutput("the decoder's scores are not numbers (NaN or infinite)")
            scores = self._allowed_scores(logits[0, position], sampled)
            best = int(scores.argmax())
            total = logsumexp(scores)
            if biased is not None:
                best = biased.choose(scores, best, float(scores[best]) - total)
            logprob = float(scores[best]) - total
            back = None
            if biased is not None and len(sampled) < max_tokens:
                back = biased.finish() if best == vocab.eot else biased.accept(best)
            if back is not None and biased is not None:
                del sampled[back:], logprobs[back:]
                best, logprob = biased.take_back(back)
            if best == vocab.eot or len(sampled) >= max_tokens:
                logprobs.append(logprob)
                if best != vocab.eot:
                    guards.append(CAPPED)
                break
            sampled.append(best)
            logprobs.append(logprob)
            loop = runaway_tail(sampled)
            if loop is not None:
                # Keep two copies, as the text guard does: people say things twice.
                del sampled[len(sampled) - loop * (RUNAWAY_REPEATS - KEPT_COPIES) :]
                guards.append("repetition")
                break
            fed, offset = [best], len(prompt) + len(sampled) - 1
        new_tokens = max(0, len(sampled) - min(len(forced), max_tokens))
        return sampled, sum(logprobs) / (new_tokens + 1), no_speech_prob, guards

    def _agreed(self, logits: NDArray[np.float32], first: int, forced: list[int]) -> int:
        """How many forced tokens greedy decoding would have chosen itself, from the
        logits of the step that fed them (`first`: where the forced tokens begin)."""
        for index, token in enumerate(forced):
            scores = self._allowed_scores(logits[first - 1 + index], forced[:index])
            if int(scores.argmax()) != token:
                return index
        return len(forced)

    def _allowed_scores(
        self, logits: NDArray[np.float32], sampled: list[int]
    ) -> NDArray[np.float32]:
        """Logits with forbidden tokens at -inf: non-speech symbols, other special tokens
        and a blank start."""
        vocab = self.vocab
        scores = logits.astype(np.float32)
        scores[self._suppress] = -np.inf
        if not sampled and self._suppress_blank:
            scores[[vocab.blank, vocab.eot]] = -np.inf
        return scores
