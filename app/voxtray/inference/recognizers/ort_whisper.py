"""Voxtray's own Whisper engine on onnxruntime: the GPU path, with quality guards.

It runs the same ONNX files sherpa-onnx does (encoder with cross-attention K/V outputs,
decoder with a self-attention KV cache and `offset`), greedy, on providers passed in. The
sessions run in `whisper_encoder` and `whisper_decoder`; here they are opened, and their
output judged: silence, prompt echoes, repeats and unsupported biasing.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from voxtray.choices import VocabularyUse
from voxtray.errors import CorruptError, ExitCode, VoxtrayError
from voxtray.gpu.builds import CPU, ort_build_info
from voxtray.gpu.native_log import capture_native_stderr, parse_provider_log, relevant_lines
from voxtray.gpu.providers import ProviderSpec, provider_names
from voxtray.inference.recognizers.base import (
    INTERRUPTED,
    Interrupt,
    Transcript,
    warmup_audio,
)
from voxtray.inference.recognizers.bias_guard import EntryCounter, supported, worth_checking
from voxtray.inference.recognizers.biasing import DEFAULT_BONUS, VocabularyTrie
from voxtray.inference.recognizers.logits import words
from voxtray.inference.recognizers.ort_sessions import (
    SessionHook,
    provider_label,
    session,
    session_options,
)
from voxtray.inference.recognizers.whisper_decoder import CAPPED, Decoded, WhisperDecoder
from voxtray.inference.recognizers.whisper_encoder import WhisperEncoder, features
from voxtray.inference.recognizers.whisper_vocab import WhisperVocab
from voxtray.inference.textguards import clean_transcript, is_silent, repeated_words
from voxtray.memory import release_free_memory
from voxtray.text.languages import AUTO, ENGLISH
from voxtray.text.vocabulary import split_common, whisper_prompt


@dataclass(frozen=True)
class _Request:
    """One `transcribe` call's input, decoded once or, to judge a repeat, twice."""

    audio: NDArray[np.float32]
    forced: list[int]
    check_prefix: bool
    interrupt: Interrupt | None


def _may_repeat(transcript: Transcript) -> bool:
    """The transcript repeats itself or ran into the token cap: worth a second look."""
    suspicious = {"repetition", CAPPED}
    return bool(suspicious.intersection(transcript.guards)) or repeated_words(transcript.text) > 0


@dataclass(frozen=True)
class WhisperOptions:
    """Decoding knobs.

    Attributes:
        tail_padding_s: Silence appended before encoding so the model sees the end of the
            speech; shorter inputs encode faster, too short a tail makes Whisper loop.
        suppress_non_speech: Never emit symbol-only tokens (♪, brackets, ...).
        suppress_blank: Never start with a space or end-of-text.
        no_speech_threshold: With `logprob_threshold`, Whisper's rule for silence.
        logprob_threshold: Average token log-probability below which output is doubted.
        certain_no_speech: No-speech probability that means silence whatever the text.
        language: Language code for multilingual models, or "auto" to detect it from the
            first decoder step; English-only models ignore it.
        initial_prompt: Text the decoder sees as if said before (Whisper's initial
            prompt): names and words in it are recognised more readily.
        vocabulary: Words and names to favour, as `vocabulary_use` says: in the
            initial prompt, by biasing (`biasing.py`, `bias_bonus` per token), or both.
    """

    tail_padding_s: float = 10.0
    suppress_non_speech: bool = True
    suppress_blank: bool = True
    no_speech_threshold: float = 0.6
    logprob_threshold: float = -1.0
    certain_no_speech: float = 0.9
    language: str = "en"
    initial_prompt: str = ""
    vocabulary: tuple[str, ...] = ()
    vocabulary_use: str = VocabularyUse.BIAS
    bias_bonus: float = DEFAULT_BONUS


class OrtWhisperRecognizer:
    """Greedy Whisper on onnxruntime sessions created with the given providers."""

    engine = "ort"
    takes_prefix = True

    def __init__(
        self,
        encoder: Path,
        decoder: Path,
        tokens: Path,
        *,
        model: str = "whisper",
        providers: list[ProviderSpec] | None = None,
        threads: int = 2,
        options: WhisperOptions | None = None,
        spin: bool = True,
        session_hook: SessionHook | None = None,
    ) -> None:
        """Open both sessions on ``providers``.

        ``session_hook`` gets each session as it is opened ("encoder", "decoder") and
        returns what the recogniser runs instead: a seam for instruments and injected
        faults (a run that raises a CUDA error, or returns NaN scores).
        """
        import onnxruntime as ort

        self.model = model
        self.options = options or WhisperOptions()
        chosen: list[ProviderSpec] = providers or [CPU]
        # onnxruntime falls back to the CPU silently, explaining why only in its native log;
        # keep that log so the fallback can be reported with its cause.
        decoder_options = session_options(ort, threads, spin)
        with capture_native_stderr() as native:
            self._encoder = session(ort, encoder, session_options(ort, threads, spin), chosen)
            self._decoder = session(ort, decoder, decoder_options, chosen)
        if session_hook is not None:
            self._encoder = session_hook("encoder", self._encoder)
            self._decoder = session_hook("decoder", self._decoder)
        names = provider_names(chosen)
        self.requested_provider = names[0].removesuffix("ExecutionProvider").lower()
        self.fallback_cause = self._fallback_cause(names, native.text)
        metadata = self._encoder.get_modelmeta().custom_metadata_map
        if not tokens.is_file():
            raise CorruptError(f"Whisper tokens file {tokens} is missing")
        self.vocab = WhisperVocab.load(metadata, tokens)
        self._check_language()
        self._encoding = WhisperEncoder(self._encoder, self.vocab)
        self._decoding = WhisperDecoder(
            self._decoder,
            self.vocab,
            suppress_non_speech=self.options.suppress_non_speech,
            suppress_blank=self.options.suppress_blank,
        )
        self._use_vocabulary()
        release_free_memory()  # the model bytes parsed while building the sessions

    def _use_vocabulary(self) -> None:
        options = self.options
        prompt = options.initial_prompt
        if options.vocabulary_use in (VocabularyUse.PROMPT, VocabularyUse.BOTH):
            prompt = " ".join(filter(None, [prompt, whisper_prompt(options.vocabulary)]))
        biased = options.vocabulary_use in (VocabularyUse.BIAS, VocabularyUse.BOTH)
        entries = options.vocabulary if biased and options.bias_bonus > 0 else ()
        entries, self.common_entries = split_common(entries)
        self._previous = self.vocab.prompt_tokens(prompt)
        self._trie = VocabularyTrie(entries, self.vocab.encoder.encode, self.vocab.token_bytes)
        self._entries = EntryCounter(entries)
        self._prompt_words = words(" ".join([prompt, *entries]))

    def with_vocabulary(self, vocabulary: tuple[str, ...]) -> OrtWhisperRecognizer:
        """A recogniser on the same sessions that favours `vocabulary` instead (a server
        request's own); not for use at the same time as this one."""
        other = copy.copy(self)
        other.options = replace(self.options, vocabulary=vocabulary)
        other._use_vocabulary()
        return other

    def with_language(self, language: str) -> OrtWhisperRecognizer:
        """A recogniser on the same sessions transcribing ``language`` (or detecting it:
        "auto"); itself for an English-only model or a language the model lacks."""
        if not self.vocab.languages or language == self.options.language:
            return self
        if language != AUTO and language not in self.vocab.languages:
            return self
        other = copy.copy(self)
        other.options = replace(self.options, language=language)
        return other

    @property
    def provider(self) -> str:
        return provider_label(self._decoder)

    def _fallback_cause(self, chosen: list[str], log: str) -> str | None:
        if self.provider == self.requested_provider:
            return None
        import onnxruntime as ort

        findings = parse_provider_log(
            relevant_lines(log), chosen, ort.get_available_providers(), ort_build_info().cuda_major
        )
        return findings[0].cause if findings else "onnxruntime gave no reason"

    def warmup(self) -> None:
        self.transcribe(warmup_audio())
        release_free_memory()

    def release_idle_memory(self) -> bool:
        """Hand both sessions' CPU arenas back; for when the app has been idle a while.

        onnxruntime shrinks an arena only at the end of a run that asks it to, and the
        encoder's arena keeps the region its last outputs sat in; the decoder's, which no
        run shrinks, ~13-34 MB, because every decoding step copies each layer's
        cross-attention K/V. One run of each on a one-frame input (~5 ms) frees both.
        Shrinking after every utterance instead would cost ~5-10 % of recognition time,
        refilling the arenas page by page. False where there was nothing to hand back
        (other providers manage their own memory).
        """
        if self._encoding.shrinks_arena:
            cross_k, cross_v = self._encoding.idle_run()
            self._decoding.idle_step(cross_k, cross_v, self._encoding.run_options)
        release_free_memory()
        return self._encoding.shrinks_arena

    def transcribe(
        self,
        audio: NDArray[np.float32],
        *,
        prefix: Sequence[int] = (),
        check_prefix: bool = False,
        interrupt: Interrupt | None = None,
    ) -> Transcript:
        started = time.perf_counter()
        forced = list(prefix)
        if not forced and is_silent(audio):
            timings = {"features": 0.0, "encoder": 0.0, "decoder": 0.0}
            language = None if self._detects else self.fixed_language
            return Transcript("", [], timings, self.provider, 1.0, ["silence"], language=language)
        request = _Request(audio, forced, check_prefix, interrupt)
        mel = features(audio, self.options.tail_padding_s)
        transcript = self._recognize(request, mel, started)
        if INTERRUPTED not in transcript.guards and _may_repeat(transcript):
            transcript = self._judge_repeat(request, transcript, mel.shape[2])
        return transcript

    def _judge_repeat(self, request: _Request, first: Transcript, frames: int) -> Transcript:
        """A decode that repeats itself may be a loop the silence after short speech
        invites: decode again on Whisper's full 30 s window, the input it was trained on,
        and keep the result with fewer repeated words (the first on a tie). Speech said
        twice is heard twice both ways."""
        started = time.perf_counter()
        full = features(request.audio, self.options.tail_padding_s, full_window=True)
        if full.shape[2] <= frames:
            return first  # already the whole window: the same input would loop the same
        second = self._recognize(request, full, started)
        if INTERRUPTED in second.guards:
            return first
        timings = {
            stage: first.timings_ms[stage] + second.timings_ms[stage] for stage in first.timings_ms
        }
        if repeated_words(second.text) < repeated_words(first.text):
            return replace(second, timings_ms=timings, guards=[*second.guards, "repeat-judged"])
        return replace(first, timings_ms=timings)

    def _recognize(self, request: _Request, mel: NDArray[np.float32], started: float) -> Transcript:
        features_done = time.perf_counter()
        encoded = self._encoding.encode(mel, request.interrupt)
        if encoded is None:
            timings = {"features": 1000 * (features_done - started), "encoder": 0.0, "decoder": 0.0}
            return Transcript("", [], timings, self.provider, None, [INTERRUPTED])
        cross_k, cross_v = encoded
        encoder_done = time.perf_counter()
        language = self._decoding.detect_language(cross_k, cross_v) if self._detects else None
        language = language or self.fixed_language
        tokens, avg_logprob, no_speech_prob, guards = self._decode_request(
            request, cross_k, cross_v, language
        )
        text, text_guards = clean_transcript(self.vocab.text(tokens).strip())
        guards += text_guards
        if self._trie and worth_checking(self._entries, text):
            plain_tokens, plain_text = self._plain(request, cross_k, cross_v, language)
            if not supported(self._entries, text, plain_text):
                text, tokens = plain_text, plain_tokens
                guards.append("bias-unsupported")
        # A forced prefix is text already agreed on, so the no-speech rule does not apply.
        if not request.forced and self._is_silence(no_speech_prob, avg_logprob):
            text, tokens = "", []
            guards.append("no-speech")
        elif self._echoes_prompt(text) and self._silent_without_prompt(
            cross_k, cross_v, request.audio
        ):
            text, tokens = "", []
            guards.append("prompt-echo")
        decoder_done = time.perf_counter()
        return Transcript(
            text=text,
            tokens=tokens,
            timings_ms={
                "features": 1000 * (features_done - started),
                "encoder": 1000 * (encoder_done - features_done),
                "decoder": 1000 * (decoder_done - encoder_done),
            },
            provider=self.provider,
            no_speech_prob=no_speech_prob,
            guards=guards,
            words=self.vocab.word_ends(tokens),
            language=language,
        )

    def _plain(
        self,
        request: _Request,
        cross_k: NDArray[np.float32],
        cross_v: NDArray[np.float32],
        language: str,
    ) -> tuple[list[int], str]:
        """The decode without the vocabulary's bonus, on the same encoder output."""
        tokens, _, _, _ = self._decode_request(request, cross_k, cross_v, language, bias=False)
        text, _ = clean_transcript(self.vocab.text(tokens).strip())
        return tokens, text

    def _echoes_prompt(self, text: str) -> bool:
        """Every word of `text` is in the initial prompt or the favoured vocabulary: on
        noise, a prompted or biased Whisper says their names with confidence."""
        said = words(text)
        return bool((self._previous or self._trie) and said and said <= self._prompt_words)

    def _silent_without_prompt(
        self, cross_k: NDArray[np.float32], cross_v: NDArray[np.float32], audio: NDArray[np.float32]
    ) -> bool:
        language = self._decoding.detect_language(cross_k, cross_v) if self._detects else None
        tokens, avg_logprob, no_speech_prob, _ = self._decoding.decode(
            cross_k, cross_v, audio.size, [], language=language or self.fixed_language
        )
        text, _ = clean_transcript(self.vocab.text(tokens).strip())
        return not text or self._is_silence(no_speech_prob, avg_logprob)

    @property
    def _detects(self) -> bool:
        return bool(self.vocab.languages) and self.options.language == AUTO

    @property
    def fixed_language(self) -> str:
        """The language every transcript is in without detection: English for an
        English-only model, otherwise the setting (English when it is `auto`)."""
        if not self.vocab.languages or self.options.language == AUTO:
            return ENGLISH
        return self.options.language

    def _check_language(self) -> None:
        language = self.options.language
        if self.vocab.languages and language != AUTO and language not in self.vocab.languages:
            raise VoxtrayError(
                f"{self.model} cannot transcribe language {language!r}; it knows auto, "
                + ", ".join(self.vocab.languages),
                ExitCode.USAGE,
            )

    def _decode_request(
        self,
        request: _Request,
        cross_k: NDArray[np.float32],
        cross_v: NDArray[np.float32],
        language: str,
        *,
        bias: bool = True,
    ) -> Decoded:
        """`WhisperDecoder.decode` of a request, after the initial prompt; with `bias`, the
        vocabulary's entries are favoured."""
        return self._decoding.decode(
            cross_k,
            cross_v,
            request.audio.size,
            self._previous,
            request.forced,
            request.check_prefix,
            request.interrupt,
            language,
            trie=self._trie if bias else None,
            bonus=self.options.bias_bonus,
        )

    def _is_silence(self, no_speech_prob: float, avg_logprob: float) -> bool:
        # Whisper's rule, plus a certain verdict on its own: confident "you" or "Thank
        # you" on near-silence come with a high no-speech probability.
        if no_speech_prob > self.options.certain_no_speech:
            return True
        return (
            no_speech_prob > self.options.no_speech_threshold
            and avg_logprob < self.options.logprob_threshold
        )
