"""Build a recogniser for an installed model: the one place that knows which engine runs
which model family."""

from __future__ import annotations

from dataclasses import dataclass

from app.errors import ExitCode, VoxtrayError
from app.inference.providers import ort_providers, resolve_request
from app.inference.recognizers.base import Recognizer
from app.models.store import InstalledModel

ENGINES = ("ort", "sherpa")


@dataclass(frozen=True)
class EngineChoice:
    engine: str = "auto"  # "auto" picks ort for Whisper, sherpa for everything else
    provider: str = "auto"
    precision: str = "auto"  # "auto" prefers int8 on the CPU, fp32 on a GPU
    threads: int = 2
    language: str = "en"

    @classmethod
    def of(cls, source: object) -> EngineChoice:
        """The choice named by any object with these fields (settings, parsed flags)."""
        return cls(
            engine=getattr(source, "engine", "auto"),
            provider=getattr(source, "provider", "auto"),
            precision=getattr(source, "precision", "auto"),
            threads=getattr(source, "threads", 2),
            language=getattr(source, "language", "en"),
        )


def pick_precision(model: InstalledModel, requested: str, provider: str) -> str:
    available: list[str] = list(model.manifest["variants"])
    if requested != "auto":
        if requested not in available:
            raise VoxtrayError(
                f"{model.name} has no {requested} variant (has {', '.join(available)})",
                ExitCode.NOT_FOUND,
            )
        return requested
    # int8 kernels run on the CPU even under CUDA, so a GPU wants fp32.
    preferred = ["fp32", "int8"] if provider != "cpu" else ["int8", "fp32"]
    return next(p for p in preferred + available if p in available)


def create_recognizer(model: InstalledModel, choice: EngineChoice) -> Recognizer:
    """A recogniser for `model`, with the engine, provider and precision resolved."""
    family = model.manifest["family"]
    engine = choice.engine
    if engine == "auto":
        engine = "ort" if family == "whisper" else "sherpa"
    if engine not in ENGINES:
        raise VoxtrayError(f"unknown engine {engine!r}; choose ort or sherpa", ExitCode.USAGE)
    provider = resolve_request(choice.provider)
    files = model.variant_files(pick_precision(model, choice.precision, provider))
    if engine == "ort":
        if family != "whisper":
            raise VoxtrayError(
                f"the ort engine runs Whisper models; {model.name} is {family} "
                "(use --engine sherpa)",
                ExitCode.USAGE,
            )
        from app.inference.recognizers.ort_whisper import OrtWhisperRecognizer, WhisperOptions

        return OrtWhisperRecognizer(
            files["encoder"],
            files["decoder"],
            files["tokens"],
            model=model.name,
            providers=ort_providers(provider),
            threads=choice.threads,
            options=WhisperOptions(language=choice.language),
        )
    from app.inference.recognizers.sherpa import SherpaRecognizer

    return SherpaRecognizer(
        family,
        files,
        model=model.name,
        provider=provider,
        threads=choice.threads,
        language=choice.language,
    )
