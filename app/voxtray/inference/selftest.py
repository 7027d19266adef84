"""The GPU self-test: is the GPU really used, is it faster, and if not, exactly why.

It runs the diagnosis (app/voxtray/gpu/diagnose.py), then transcribes a real clip on the CPU and on
the requested provider (cold, then warm runs), checks both give the same words, and turns
all of it into one verdict with its cause and fix. A GPU that loads and then fails while
transcribing (out of memory, a CUDA error, a lost card, NaN scores or `<unk>` soup) is
`Verdict.GPU_FAILED` with the cause named (app/voxtray/gpu/failures.py).
"""

from __future__ import annotations

import enum
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from voxtray.audio.decode import load_audio
from voxtray.choices import Engine, Precision, Provider
from voxtray.errors import ExitCode
from voxtray.gpu.failures import FIXES, FailureKind, GpuFailure, classify, garbage
from voxtray.gpu.nvml import gpu_memory
from voxtray.gpu.providers import resolve_request
from voxtray.inference.accuracy import WRONG_TEXT_WER, check_clip
from voxtray.inference.cpu import host_int8
from voxtray.inference.engines import (
    EngineChoice,
    RecognizerFactory,
    create_recognizer,
    int8_exact,
    pick_precision,
)
from voxtray.inference.gpu_fallback import failed_earlier
from voxtray.inference.recognizers.base import ExplainsFallback
from voxtray.models.store import InstalledModel
from voxtray.resources import resource_path
from voxtray.scoring.wer import word_errors

TEXT_AGREEMENT_WER = 0.1
"""CPU and GPU kernels round differently; more disagreement than this means a broken run."""


class Verdict(enum.StrEnum):
    GPU_OK = "gpu-ok"
    CPU_OK = "cpu-ok"  # CPU asked for and working
    GPU_SLOWER = "gpu-slower-than-cpu"
    CPU_FALLBACK = "cpu-fallback"
    OTHER_GPU_PROVIDER = "other-gpu-provider"  # e.g. TensorRT asked for, CUDA ran
    NO_GPU = "no-gpu"
    BROKEN_MODEL = "broken-model"
    WRONG_WORDS = "wrong-words"  # every precision hears the accuracy clip wrong here
    GPU_FAILED = "gpu-failed"  # loaded, then failed while transcribing


EXIT_CODES = {
    Verdict.GPU_OK: ExitCode.OK,
    Verdict.CPU_OK: ExitCode.OK,
    Verdict.GPU_SLOWER: ExitCode.GPU_SLOWER,
    Verdict.CPU_FALLBACK: ExitCode.GPU_FALLBACK,
    Verdict.OTHER_GPU_PROVIDER: ExitCode.GPU_FALLBACK,
    Verdict.NO_GPU: ExitCode.NO_GPU,
    Verdict.BROKEN_MODEL: ExitCode.BROKEN_MODEL,
    Verdict.WRONG_WORDS: ExitCode.BROKEN_MODEL,
    Verdict.GPU_FAILED: ExitCode.GPU_FALLBACK,
}


@dataclass
class RunStats:
    """One provider's runs of the clip."""

    requested: str
    provider: str
    cold_ms: float
    warm_ms: float
    runs_ms: list[float]
    text: str
    fallback_cause: str | None = None
    failure: GpuFailure | None = None
    heard: str = ""  # the accuracy clip's text
    wer: float = 0.0  # its word error rate

    @property
    def wrong_words(self) -> bool:
        return self.wer > WRONG_TEXT_WER


@dataclass
class SelfTestReport:
    requested: str
    model: str
    precision: str
    verdict: Verdict
    summary: str
    cause: str | None
    fix: str | None
    cpu: RunStats
    gpu: RunStats | None
    speedup: float | None
    texts_agree: bool
    gpu_memory: dict[str, Any] | None
    diagnosis: dict[str, Any] | None
    fixes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reinstall: str | None = None  # the model whose files give wrong words: reinstall it

    @property
    def exit_code(self) -> ExitCode:
        return EXIT_CODES[self.verdict]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict.value
        data["exit_code"] = int(self.exit_code)
        return data

    def text_report(self, repair: Callable[[str], str] = lambda model: f"reinstall {model}") -> str:
        """The report as lines; `repair` words how the front end reinstalls a model."""
        lines = [f"verdict: {self.verdict.value}: {self.summary}"]
        lines.append(f"model: {self.model} ({self.precision})")
        for stats in filter(None, (self.cpu, self.gpu)):
            lines.append(
                f"{stats.requested} asked, {stats.provider} ran: cold {stats.cold_ms:.0f} ms, "
                f"warm {stats.warm_ms:.1f} ms (median of {len(stats.runs_ms)}); {stats.text!r}"
            )
            right = 100 * max(0.0, 1 - stats.wer)
            lines.append(f"  accuracy clip: {right:.0f} % of the words right; {stats.heard!r}")
        if self.speedup is not None:
            lines.append(f"speedup over the CPU (warm): {self.speedup:.2f}x")
        if self.cause:
            lines.append(f"cause: {self.cause}")
        lines += [f"fix: {fix}" for fix in self.fixes or ([self.fix] if self.fix else [])]
        if self.reinstall is not None:
            lines.append(f"fix: {repair(self.reinstall)}")
        memory = self.gpu_memory
        if memory is None:
            lines.append("GPU memory: no GPU")
        else:
            mine, total = memory["process_mb"], memory["total_mb"]
            card = f"GPU {memory['index']} {memory['name']}"
            lines.append(f"GPU memory on {card}: this process {mine:.0f} MiB of {total:.0f} MiB")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def time_runs(
    model: InstalledModel,
    choice: EngineChoice,
    audio: Any,
    runs: int,
    create: RecognizerFactory = create_recognizer,
    *,
    on_gpu: bool = False,
) -> RunStats:
    """Cold = load + first transcription; warm = median of `runs` more.

    With ``on_gpu``, a transcription that fails is the GPU's failure: the stats carry it
    (with the text so far empty) instead of the error.
    """
    started = time.perf_counter()
    recognizer = create(model, choice)
    timings: list[float] = []
    try:
        text = recognizer.transcribe(audio).text
        cold_ms = 1000 * (time.perf_counter() - started)
        for _ in range(runs):
            began = time.perf_counter()
            recognizer.transcribe(audio)
            timings.append(1000 * (time.perf_counter() - began))
        heard = check_clip(recognizer)
    except Exception as exc:  # CUDA, out of memory, a lost card, NaN scores
        if not on_gpu:
            raise
        return RunStats(
            requested=choice.provider,
            provider=recognizer.provider,
            cold_ms=round(1000 * (time.perf_counter() - started), 1),
            warm_ms=0.0,
            runs_ms=[round(t, 2) for t in timings],
            text="",
            failure=classify(exc, recognizer.provider),
        )
    return RunStats(
        heard=heard.text,
        wer=heard.wer,
        requested=choice.provider,
        provider=recognizer.provider,
        cold_ms=round(cold_ms, 1),
        warm_ms=round(statistics.median(timings), 2),
        runs_ms=[round(t, 2) for t in timings],
        text=text,
        fallback_cause=(
            recognizer.fallback_cause if isinstance(recognizer, ExplainsFallback) else None
        ),
    )


def run_selftest(
    model: InstalledModel,
    provider: str = Provider.AUTO,
    *,
    precision: str = Precision.AUTO,
    runs: int = 5,
    gpu_index: int = 0,
    threads: int = 2,
    progress: Callable[[str], None] | None = None,
    create: RecognizerFactory = create_recognizer,
) -> SelfTestReport:
    """Run the checks and both transcriptions; see `Verdict` for the outcomes.

    The GPU runs and the memory reading are on card `gpu_index`; an index beyond the cards
    present raises a one-line `VoxtrayError`. ``create`` opens each recogniser.
    """
    say = progress or (lambda _message: None)
    requested = resolve_request(provider) if provider == Provider.AUTO else provider
    chosen = pick_precision(model, precision, requested, avoid=_avoided(model, precision))
    audio = load_audio(resource_path("selftest.wav"))
    diagnosis = None
    if requested != Provider.CPU:
        from voxtray.gpu.diagnose import diagnose

        say(f"checking the {requested} provider on GPU {gpu_index}")
        diagnosis = diagnose(requested, model.variant_files(chosen)["encoder"], gpu_index)
    say("transcribing on the CPU")
    cpu = _cpu_runs(model, chosen, threads, audio, runs, create)
    wrong: list[str] = []
    others = [p for p in model.manifest["variants"] if p != chosen]
    if cpu.wrong_words and precision == Precision.AUTO and others:
        say(f"{chosen} hears wrong words here; transcribing in {others[0]}")
        wrong.append(_wrong_words_note(model, chosen, cpu))
        chosen = others[0]
        cpu = _cpu_runs(model, chosen, threads, audio, runs, create)
    gpu = None
    if requested != Provider.CPU:
        say(f"transcribing on {requested}")
        choice = EngineChoice(
            engine=Engine.ORT,
            provider=requested,
            precision=chosen,
            threads=threads,
            gpu_index=gpu_index,
        )
        gpu = time_runs(model, choice, audio, runs, create, on_gpu=True)
    memory = gpu_memory(gpu_index)
    report = _judge(model, requested, chosen, cpu, gpu, diagnosis, memory)
    earlier = failed_earlier(requested, gpu_index)
    if earlier is not None:  # the tray's own self-test, after dictation found it broken
        report.notes.insert(
            0,
            f"earlier in this session dictation found {earlier.provider} broken and went on "
            f"on the CPU: {earlier.cause}",
        )
    report.notes[:0] = wrong
    return report


def _avoided(model: InstalledModel, precision: str) -> frozenset[str]:
    """For auto, the precisions "Measure on this machine" found hearing wrong words (CPU)."""
    if precision != Precision.AUTO:
        return frozenset()
    from voxtray.inference.measured_here import precisions_to_avoid

    return precisions_to_avoid(model, Provider.CPU)


def _cpu_runs(
    model: InstalledModel,
    precision: str,
    threads: int,
    audio: Any,
    runs: int,
    create: RecognizerFactory,
) -> RunStats:
    choice = EngineChoice(
        engine=Engine.ORT, provider=Provider.CPU, precision=precision, threads=threads
    )
    return time_runs(model, choice, audio, runs, create)


def _wrong_words_note(model: InstalledModel, precision: str, stats: RunStats) -> str:
    """Why `precision` heard the accuracy clip wrong, as far as this machine tells."""
    right = 100 * max(0.0, 1 - stats.wer)
    said = f"{precision} heard {right:.0f} % of the accuracy clip's words right"
    cpu = host_int8()
    if precision == Precision.INT8 and not int8_exact(model, cpu):
        return f"{said}: its int8 weights overflow on this CPU ({cpu.describe()}); fp32 used"
    return f"{said} on this machine; the next precision used"


FALLBACKS = (Verdict.NO_GPU, Verdict.CPU_FALLBACK, Verdict.OTHER_GPU_PROVIDER)


def _judge(
    model: InstalledModel,
    requested: str,
    precision: str,
    cpu: RunStats,
    gpu: RunStats | None,
    diagnosis: Any,
    memory: Any,
) -> SelfTestReport:
    agree = gpu is None or word_errors(cpu.text, gpu.text).rate <= TEXT_AGREEMENT_WER
    speedup = round(cpu.warm_ms / gpu.warm_ms, 2) if gpu is not None and gpu.warm_ms > 0 else None
    facts = diagnosis.__dict__ if diagnosis is not None else {}
    cause: str | None = None
    fix: str | None = None
    reinstall: str | None = None
    fixes: list[str] = list(facts.get("fixes", []))
    notes: list[str] = list(facts.get("notes", []))
    failure = _gpu_failure(cpu, gpu)
    if not cpu.text.strip() or "<unk>" in cpu.text.lower():
        verdict, summary = Verdict.BROKEN_MODEL, "the model gives no words for real speech"
        reinstall = model.name
    elif cpu.wrong_words:
        right = 100 * max(0.0, 1 - cpu.wer)
        verdict = Verdict.WRONG_WORDS
        summary = f"{precision} on the CPU hears {right:.0f} % of a clear clip's words right"
        reinstall = model.name
    elif gpu is None:
        verdict, summary = Verdict.CPU_OK, f"the CPU runs {model.name}"
    elif failure is not None:
        verdict, cause, fix = Verdict.GPU_FAILED, failure.cause, failure.fix
        summary = (
            f"{failure.provider} loaded, then failed while transcribing: {failure.cause}; "
            "dictation redoes such a recording on the CPU"
        )
    elif gpu.provider != requested and gpu.provider != Provider.CPU:
        verdict = Verdict.OTHER_GPU_PROVIDER
        cause = facts.get("cause") or gpu.fallback_cause
        summary = f"{requested} was asked for but {gpu.provider} ran it, {speedup}x the CPU"
        fix = facts.get("fix")
    elif gpu.provider != requested:
        driver_ok = facts.get("driver") is not None and facts["driver"].ok
        verdict = Verdict.CPU_FALLBACK if driver_ok else Verdict.NO_GPU
        cause = facts.get("cause") or gpu.fallback_cause
        summary = (
            f"{requested} was asked for but the CPU ran it"
            if driver_ok
            else f"no usable GPU: {cause}; {requested} fell back to the CPU"
        )
        if gpu.fallback_cause and gpu.fallback_cause != cause:
            notes.insert(0, f"onnxruntime's own reason: {gpu.fallback_cause}")
        fix = facts.get("fix")
    elif not agree:
        verdict, summary = Verdict.BROKEN_MODEL, f"{requested} and the CPU disagree on the words"
    elif speedup is not None and speedup < 1.0:
        verdict = Verdict.GPU_SLOWER
        summary = f"{requested} runs but is {1 / speedup:.1f}x slower than the CPU"
        fix = (
            "use the fp32 model on the GPU (int8 kernels stay on the CPU)"
            if precision == "int8"
            else None
        )
    else:
        verdict, summary = Verdict.GPU_OK, f"{requested} runs {model.name}, {speedup}x the CPU"
    return SelfTestReport(
        requested=requested,
        model=model.name,
        precision=precision,
        verdict=verdict,
        summary=summary,
        cause=cause,
        fix=fix,
        cpu=cpu,
        gpu=gpu,
        speedup=speedup,
        texts_agree=agree,
        gpu_memory=asdict(memory) if memory is not None else None,
        diagnosis=_plain(diagnosis),
        fixes=fixes if verdict in FALLBACKS else [],
        notes=notes,
        reinstall=reinstall,
    )


def _gpu_failure(cpu: RunStats, gpu: RunStats | None) -> GpuFailure | None:
    """How the GPU failed while transcribing: an error, or output that cannot be text
    where the CPU's can."""
    if gpu is None or gpu.failure is not None:
        return None if gpu is None else gpu.failure
    why = garbage(gpu.text)
    if why is None or gpu.provider == Provider.CPU or garbage(cpu.text) is not None:
        return None
    kind = FailureKind.BROKEN_OUTPUT
    return GpuFailure(kind, gpu.provider, f"output that cannot be text: {why}", FIXES[kind])


def _plain(diagnosis: Any) -> dict[str, Any] | None:
    if diagnosis is None:
        return None
    import json

    data: dict[str, Any] = json.loads(diagnosis.to_json())
    return data
