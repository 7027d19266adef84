"""Build a recogniser for an installed model: the one place that knows which engine runs
which model family."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxtray.choices import Engine, Precision, Provider, VocabularyUse
from voxtray.errors import ExitCode, VoxtrayError, WrongEngineError
from voxtray.gpu.providers import ort_providers, require_gpu, resolve_request
from voxtray.inference.cpu import CpuInt8, host_int8
from voxtray.inference.recognizers.base import Recognizer
from voxtray.models.store import InstalledModel

if TYPE_CHECKING:
    from voxtray.inference.recognizers.ort_whisper import WhisperOptions
from voxtray.inference.recognizers.biasing import DEFAULT_BONUS
from voxtray.text.vocabulary import parse_vocabulary

ENGINES = (Engine.ORT, Engine.SHERPA)
SPEECH_FAMILIES = ("whisper", "nemo-transducer", "nemo-ctc", "moonshine")
_OTHER_KINDS = {"silero-vad": "a voice-activity model"}


@dataclass(frozen=True)
class EngineChoice:
    engine: str = Engine.AUTO  # auto picks ort for Whisper, sherpa for everything else
    provider: str = Provider.AUTO
    precision: str = Precision.AUTO  # auto prefers int8 on the CPU, fp32 on a GPU
    threads: int = 2
    language: str = "en"
    gpu_index: int = 0  # the card a GPU provider runs on, as NVML and CUDA number them
    spin: bool = True  # onnxruntime's threads busy-wait between ops (False: a server's CPUs)
    vocabulary: tuple[str, ...] = ()  # words and names recognition should favour
    vocabulary_use: str = VocabularyUse.BIAS  # how Whisper on the ort engine favours them
    bias_bonus: float = DEFAULT_BONUS

    @classmethod
    def of(cls, source: object) -> EngineChoice:
        """The choice named by any object with these fields (settings, parsed flags)."""
        return cls(
            engine=getattr(source, "engine", Engine.AUTO),
            provider=getattr(source, "provider", Provider.AUTO),
            precision=getattr(source, "precision", Precision.AUTO),
            threads=getattr(source, "threads", 2),
            language=getattr(source, "language", "en"),
            gpu_index=getattr(source, "gpu_index", 0),
            spin=getattr(source, "spin", True),
            vocabulary=_vocabulary(getattr(source, "vocabulary", None)),
        )


def _vocabulary(value: object) -> tuple[str, ...]:
    """A vocabulary from settings text (lines or commas) or a sequence of entries."""
    if isinstance(value, str):
        return parse_vocabulary(value)
    if isinstance(value, tuple | list):
        return tuple(str(entry) for entry in value)
    return ()


def _whisper_options(choice: EngineChoice) -> WhisperOptions:
    from voxtray.inference.recognizers.ort_whisper import WhisperOptions

    return WhisperOptions(
        language=choice.language,
        vocabulary=choice.vocabulary,
        vocabulary_use=choice.vocabulary_use,
        bias_bonus=choice.bias_bonus,
    )


def _catalog_languages(model: InstalledModel) -> tuple[str, ...]:
    from voxtray.models.catalog import load_catalog

    entry = load_catalog().models.get(model.name)
    return entry.languages if entry is not None else ()


def pick_precision(
    model: InstalledModel,
    requested: str,
    provider: str,
    cpu: CpuInt8 | None = None,
    *,
    avoid: Collection[str] = (),
) -> str:
    """The variant to load: `requested`, or for auto int8 on a CPU whose int8 products are
    exact for this model's weights (`cpu`: the host's by default), fp32 otherwise, and
    never one in `avoid` (measured giving wrong words here) while another is left."""
    available: list[str] = list(model.manifest["variants"])
    if requested != Precision.AUTO:
        if requested not in available:
            raise VoxtrayError(
                f"{model.name} has no {requested} variant (has {', '.join(available)})",
                ExitCode.NOT_FOUND,
            )
        return requested
    # int8 kernels run on the CPU even under CUDA, so a GPU wants fp32.
    preferred = [Precision.FP32, Precision.INT8]
    if provider == Provider.CPU and int8_exact(model, cpu or host_int8()):
        preferred.reverse()
    ordered = [str(p) for p in dict.fromkeys([*preferred, *available]) if p in available]
    return next((p for p in ordered if p not in avoid), ordered[0])


def int8_exact(model: InstalledModel, cpu: CpuInt8) -> bool:
    """The model's int8 weights give exact products on `cpu`: reduced-range weights
    everywhere, full-range ones only with VNNI (or off x86)."""
    return cpu.full_range_exact or model.int8_exact_everywhere


RecognizerFactory = Callable[[InstalledModel, EngineChoice], Recognizer]
"""Opens a recogniser for a model as the choice says (`create_recognizer`, or a test's
recogniser with injected faults)."""


def create_recognizer(model: InstalledModel, choice: EngineChoice) -> Recognizer:
    """A recogniser for `model`, with the engine, provider and precision resolved."""
    family = model.manifest["family"]
    if family not in SPEECH_FAMILIES:
        kind = _OTHER_KINDS.get(family, f"a {family} model")
        raise VoxtrayError(f"{model.name} is {kind}, not a speech-to-text model", ExitCode.USAGE)
    engine = choice.engine
    if engine == Engine.AUTO:
        engine = Engine.ORT if family == "whisper" else Engine.SHERPA
    if engine not in ENGINES:
        raise VoxtrayError(f"unknown engine {engine!r}; choose ort or sherpa", ExitCode.USAGE)
    provider = resolve_request(choice.provider)
    files = model.variant_files(pick_precision(model, choice.precision, provider))
    if engine == Engine.ORT:
        if family != "whisper":
            raise WrongEngineError(
                f"the ort engine runs Whisper models; {model.name} is {family}", Engine.SHERPA.value
            )
        from voxtray.inference.recognizers.ort_whisper import OrtWhisperRecognizer

        return OrtWhisperRecognizer(
            files["encoder"],
            files["decoder"],
            files["tokens"],
            model=model.name,
            providers=ort_providers(provider, choice.gpu_index),
            threads=choice.threads,
            options=_whisper_options(choice),
            spin=choice.spin,
        )
    from voxtray.inference.recognizers.sherpa import SherpaRecognizer

    if provider != Provider.CPU:
        require_gpu(choice.gpu_index)
    return SherpaRecognizer(
        family,
        files,
        model=model.name,
        provider=provider,
        threads=choice.threads,
        language=choice.language,
        languages=_catalog_languages(model),
        gpu_index=choice.gpu_index,
        hotwords=choice.vocabulary,
    )
