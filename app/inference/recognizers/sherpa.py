"""sherpa-onnx's OfflineRecognizer over an installed model of any family it supports."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.audio.features import SAMPLE_RATE
from app.errors import CorruptError
from app.inference.recognizers.base import Transcript
from app.inference.textguards import clean_transcript, is_silent

FAMILIES = ("whisper", "nemo-transducer", "nemo-ctc", "moonshine")


def sherpa_has_cuda() -> bool:
    """Whether the installed sherpa-onnx carries onnxruntime's CUDA provider.

    The PyPI build does not: asked for CUDA it logs a warning and runs on the CPU, so
    the provider is decided here rather than believed.
    """
    import sherpa_onnx

    lib = Path(sherpa_onnx.__file__).parent / "lib"
    return any(lib.glob("*providers_cuda*"))


class SherpaRecognizer:
    """A sherpa-onnx OfflineRecognizer; `files` are the model's variant files by role."""

    engine = "sherpa"

    def __init__(
        self,
        family: str,
        files: dict[str, Path],
        *,
        model: str = "",
        provider: str = "cpu",
        threads: int = 2,
        language: str = "en",
    ) -> None:
        if family not in FAMILIES:
            raise CorruptError(f"sherpa-onnx cannot run a {family} model")
        self.model = model or family
        self.family = family
        self._provider = provider if provider == "cpu" or sherpa_has_cuda() else "cpu"
        self._recognizer = _create(family, files, self._provider, threads, language)

    @property
    def provider(self) -> str:
        return self._provider

    def warmup(self) -> None:
        self.transcribe(np.zeros(SAMPLE_RATE // 2, dtype=np.float32))

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        started = time.perf_counter()
        if is_silent(audio):
            return Transcript("", [], {"recognize": 0.0}, self._provider, guards=["silence"])
        stream = self._recognizer.create_stream()
        stream.accept_waveform(SAMPLE_RATE, np.ascontiguousarray(audio, dtype=np.float32))
        self._recognizer.decode_stream(stream)
        elapsed_ms = 1000 * (time.perf_counter() - started)
        result = stream.result
        text, guards = clean_transcript(result.text.strip())
        return Transcript(
            text=text,
            tokens=[int(t) for t in getattr(result, "token_ids", []) or []],
            timings_ms={"recognize": elapsed_ms},
            provider=self._provider,
            guards=guards,
        )


def _create(family: str, files: dict[str, Path], provider: str, threads: int, language: str) -> Any:
    import sherpa_onnx

    paths = {role: str(path) for role, path in files.items()}
    for role, path in files.items():
        if not path.is_file():
            raise CorruptError(f"{family} model file for {role} is missing: {path}")
    common: dict[str, Any] = {
        "tokens": paths["tokens"],
        "num_threads": threads,
        "provider": provider,
    }
    recognizer_class = sherpa_onnx.OfflineRecognizer
    try:
        if family == "whisper":
            return recognizer_class.from_whisper(
                encoder=paths["encoder"], decoder=paths["decoder"], language=language, **common
            )
        if family == "nemo-transducer":
            return recognizer_class.from_transducer(
                encoder=paths["encoder"],
                decoder=paths["decoder"],
                joiner=paths["joiner"],
                model_type="nemo_transducer",
                **common,
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
