"""sherpa-onnx's OfflineRecognizer over an installed model of any family it supports."""

from __future__ import annotations

import functools
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voxtray.audio import SAMPLE_RATE
from voxtray.choices import Provider
from voxtray.errors import CorruptError
from voxtray.gpu.builds import sherpa_has_cuda
from voxtray.inference.recognizers.base import Transcript, warmup_audio
from voxtray.inference.textguards import clean_transcript, is_silent
from voxtray.text.languages import AUTO, ENGLISH, WHISPER_LANGUAGES
from voxtray.text.vocabulary import hotwords_lines, split_common

FAMILIES = ("whisper", "nemo-transducer", "nemo-ctc", "moonshine")
ROLES = {
    "whisper": ("encoder", "decoder", "tokens"),
    "nemo-transducer": ("encoder", "decoder", "joiner", "tokens"),
    "nemo-ctc": ("model", "tokens"),
    "moonshine": ("preprocessor", "encoder", "uncached_decoder", "cached_decoder", "tokens"),
}
# Metadata sherpa-onnx reads without checking; a missing key ends the process, so it is
# checked here first.
_REQUIRED_METADATA = {
    ("whisper", "encoder"): (
        "n_mels",
        "n_text_layer",
        "n_text_ctx",
        "n_text_state",
        "sot_sequence",
        "eot",
    ),
    ("nemo-ctc", "model"): ("vocab_size", "subsampling_factor"),
    ("nemo-transducer", "encoder"): (
        "vocab_size",
        "subsampling_factor",
        "pred_rnn_layers",
        "pred_hidden",
    ),
}
_BLANKS = ("<blk>", "<blank>", "<eps>")
WHISPER_TAIL_PADDING_FRAMES = 1500
"""Silence frames sherpa-onnx appends before encoding. Its default, 1000, makes Whisper base
end after a word or two on short clips (eval WER 8.5 %); 1500 gives 4.8 %."""
HOTWORDS_SCORE = 1.5
"""Bonus per token of a hotword on the beam (sherpa-onnx's default)."""
_log = logging.getLogger(__name__)


class SherpaRecognizer:
    """A sherpa-onnx OfflineRecognizer; `files` are the model's variant files by role."""

    engine = "sherpa"

    def __init__(
        self,
        family: str,
        files: dict[str, Path],
        *,
        model: str = "",
        provider: str = Provider.CPU,
        threads: int = 2,
        language: str = ENGLISH,
        languages: tuple[str, ...] = (),
        gpu_index: int = 0,
        hotwords: tuple[str, ...] = (),
    ) -> None:
        if family not in FAMILIES:
            raise CorruptError(f"sherpa-onnx cannot run a {family} model")
        self.model = model or family
        self.family = family
        self._language = _reported_language(family, language, languages)
        check_model_files(family, files)
        self._provider = _provider(provider, gpu_index)
        hotwords, self.common_entries = split_common(hotwords)
        if hotwords and family != "nemo-transducer":
            _log.warning(
                "a vocabulary biases Whisper on the ort engine and transducers; "
                "sherpa-onnx's %s recognizer ignores it",
                family,
            )
        with tempfile.TemporaryDirectory(prefix="voxtray-hotwords-") as folder:
            extra = (
                _hotwords_config(files["tokens"], hotwords, Path(folder))
                if hotwords and family == "nemo-transducer"
                else {}
            )
            whisper_language = "" if language == AUTO else language
            self._recognizer = _create(
                family, files, self._provider, threads, whisper_language, extra
            )

    @property
    def provider(self) -> str:
        return self._provider

    def warmup(self) -> None:
        self.transcribe(warmup_audio())

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        started = time.perf_counter()
        if is_silent(audio):
            return Transcript(
                "",
                [],
                {"recognize": 0.0},
                self._provider,
                None,
                ["silence"],
                language=self._language,
            )
        stream = self._recognizer.create_stream()
        stream.accept_waveform(SAMPLE_RATE, np.ascontiguousarray(audio, dtype=np.float32))
        try:
            self._recognizer.decode_stream(stream)
        except (RuntimeError, IndexError) as exc:
            raise CorruptError(f"sherpa-onnx failed on the {self.family} model: {exc}") from None
        elapsed_ms = 1000 * (time.perf_counter() - started)
        result = stream.result
        text, guards = clean_transcript(result.text.strip())
        return Transcript(
            text=text,
            tokens=[],  # sherpa-onnx gives token strings, not ids
            timings_ms={"recognize": elapsed_ms},
            provider=self._provider,
            guards=guards,
            language=self._language or _result_language(result),
        )


def _reported_language(family: str, language: str, languages: tuple[str, ...]) -> str | None:
    """The language every transcript is in, when known before recognition: the model's
    only language, or the one a multilingual Whisper is set to; None for `auto` (then
    the result says) and for multilingual models without a setting (NeMo v3)."""
    if len(languages) == 1 and languages[0] in WHISPER_LANGUAGES:
        return languages[0]
    if family == "whisper" and language != AUTO:
        return language
    return None


def _result_language(result: Any) -> str | None:
    # sherpa-onnx reports a Whisper's detected language as "<|de|>" or "de".
    lang = str(getattr(result, "lang", "") or "").strip("<|>")
    return lang if lang in WHISPER_LANGUAGES else None


def _provider(requested: str, gpu_index: int) -> str:
    """The provider sherpa-onnx will really use."""
    if requested == Provider.CPU or not sherpa_has_cuda():
        return Provider.CPU.value
    if gpu_index != 0:
        # Its offline recognisers take a provider name only, no device.
        _log.warning(
            "sherpa-onnx's offline recognizer has no GPU index setting: it runs on GPU 0, "
            "not GPU %d (the ort engine honours the index)",
            gpu_index,
        )
    return str(requested)


def check_model_files(family: str, files: dict[str, Path]) -> None:
    """Refuse, with a one-line CorruptError, the broken models sherpa-onnx would answer by
    ending the process: missing roles or files, a tokens file without the blank symbol,
    missing metadata, files of another family."""
    missing = [role for role in ROLES[family] if role not in files]
    if missing:
        raise CorruptError(f"the {family} model lacks its {', '.join(missing)} file")
    for role in ROLES[family]:
        if not files[role].is_file():
            raise CorruptError(f"{family} model file for {role} is missing: {files[role]}")
    symbols = _token_symbols(files["tokens"])
    if not symbols:
        raise CorruptError(f"{files['tokens']} holds no tokens")
    if family.startswith("nemo") and not set(_BLANKS) & set(symbols):
        raise CorruptError(
            f"{files['tokens']} has no blank symbol (<blk>), so it is not a NeMo tokens file"
        )
    for (of_family, role), keys in _REQUIRED_METADATA.items():
        if of_family == family:
            _check_metadata(family, role, files[role], keys)
    if family == "nemo-ctc" and "pred_rnn_layers" in _metadata(files["model"], family):
        raise CorruptError(f"{files['model']} is a NeMo transducer encoder, not a CTC model")
    if family == "moonshine":
        _check_moonshine_decoders(files)


def _token_symbols(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptError(f"cannot read tokens file {path}: {exc}") from None
    return [line.rsplit(" ", 1)[0] for line in lines if line.strip()]


@functools.lru_cache(maxsize=16)
def _metadata_cached(path: Path, size: int, mtime: float) -> dict[str, str]:
    del size, mtime  # part of the cache key: a replaced file is read again
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf raises its own DecodeError types
        raise CorruptError(f"{path} is not a readable ONNX model: {exc}") from None
    meta = {prop.key: prop.value for prop in model.metadata_props}
    meta["__inputs__"] = str(len(model.graph.input))
    return meta


def _metadata(path: Path, family: str) -> dict[str, str]:
    stat = path.stat()
    try:
        return _metadata_cached(path, stat.st_size, stat.st_mtime)
    except CorruptError as exc:
        raise CorruptError(f"the {family} model is broken: {exc}") from None


def _check_metadata(family: str, role: str, path: Path, keys: tuple[str, ...]) -> None:
    meta = _metadata(path, family)
    absent = [key for key in keys if key not in meta]
    if absent:
        raise CorruptError(
            f"{path.name} is not a {family} {role}: its metadata lacks {', '.join(absent)}"
        )


def _check_moonshine_decoders(files: dict[str, Path]) -> None:
    # The cached decoder also takes the KV cache, so it has more inputs than the other.
    uncached = int(_metadata(files["uncached_decoder"], "moonshine")["__inputs__"])
    cached = int(_metadata(files["cached_decoder"], "moonshine")["__inputs__"])
    if cached <= uncached:
        raise CorruptError("the Moonshine cached and uncached decoders look swapped")


def _hotwords_config(tokens: Path, hotwords: tuple[str, ...], folder: Path) -> dict[str, Any]:
    """from_transducer arguments for hotwords: beam search, the phrases, and a BPE vocabulary
    made from the model's own tokens so sherpa-onnx can split the phrases into them."""
    symbols = [s for s in _token_symbols(tokens) if not (s.startswith("<") and s.endswith(">"))]
    cased = any(symbol != symbol.lower() for symbol in symbols)
    phrases = hotwords if cased else tuple(phrase.lower() for phrase in hotwords)
    # Equal scores: the split with the fewest pieces wins, as in the model's own encoding.
    (folder / "bpe.vocab").write_text(
        "".join(f"{symbol}\t-1\n" for symbol in symbols), encoding="utf-8"
    )
    (folder / "hotwords.txt").write_text(hotwords_lines(phrases), encoding="utf-8")
    return {
        "decoding_method": "modified_beam_search",
        "hotwords_file": str(folder / "hotwords.txt"),
        "hotwords_score": HOTWORDS_SCORE,
        "modeling_unit": "bpe",
        "bpe_vocab": str(folder / "bpe.vocab"),
    }


def _create(
    family: str,
    files: dict[str, Path],
    provider: str,
    threads: int,
    language: str,
    extra: dict[str, Any],
) -> Any:
    import sherpa_onnx

    paths = {role: str(path) for role, path in files.items()}
    common: dict[str, Any] = {
        "tokens": paths["tokens"],
        "num_threads": threads,
        "provider": provider,
    }
    recognizer_class = sherpa_onnx.OfflineRecognizer
    try:
        if family == "whisper":
            return recognizer_class.from_whisper(
                encoder=paths["encoder"],
                decoder=paths["decoder"],
                language=language,
                tail_paddings=WHISPER_TAIL_PADDING_FRAMES,
                **common,
            )
        if family == "nemo-transducer":
            return recognizer_class.from_transducer(
                encoder=paths["encoder"],
                decoder=paths["decoder"],
                joiner=paths["joiner"],
                model_type="nemo_transducer",
                **common,
                **extra,
            )
        if family == "nemo-ctc":
            return recognizer_class.from_nemo_ctc(model=paths["model"], **common)
        return recognizer_class.from_moonshine(
            preprocessor=paths["preprocessor"],
            encoder=paths["encoder"],
            uncached_decoder=paths["uncached_decoder"],
            cached_decoder=paths["cached_decoder"],
            **common,
        )
    except (RuntimeError, KeyError) as exc:
        raise CorruptError(f"sherpa-onnx cannot load the {family} model: {exc}") from None
