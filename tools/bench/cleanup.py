"""`python -m tools.bench.cleanup [--endpoint URL] [--model NAME] [--runs N]`: what
clean-up costs, printed as JSON (docs/benchmarks.md):

- off: a dictation's whole clean-up path with clean-up off (`cleaner_for` returning None
  and the test of it), per dictation, beside an empty loop, and the threads it started;
- guard: the guard's check of a careful answer of 10, 50 and 200 words, and of a refused
  one (words dropped);
- with an endpoint (this computer's, or a host in the consented hosts): the round trip,
  the guard and the whole clean-up per request, with the reasons the guard gave.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from dataclasses import dataclass

from voxtray.cleanup.cleaner import Cleaner, CleanupConfig, cleaner_for
from voxtray.cleanup.guard import check
from voxtray.cleanup.keys import cleanup_key_store
from voxtray.cleanup.prompts import resolve_prompt

SENTENCE = [
    "um", "so", "i", "think", "we", "should", "uh", "send", "the", "budget", "report", "to",
    "twenty", "five", "people", "by", "friday", "and", "then", "meet", "on", "monday", "at",
    "three", "thirty", "to", "go", "over", "the", "numbers", "okay"
]  # fmt: skip


@dataclass(frozen=True)
class _Off:
    cleanup_enabled: bool = False
    cleanup_endpoint: str = ""
    cleanup_model: str = ""
    cleanup_prompt: str = ""
    cleanup_budget_ms: int = 0
    cleanup_timeout_s: float = 0.0
    cleanup_consented_hosts: str = ""


def words(count: int, start: int = 0) -> str:
    """`count` words of dictation, from word `start` of the sentence on (runs differ, so
    a server's cache of the last request does not answer the next)."""
    return " ".join(SENTENCE[(start + index) % len(SENTENCE)] for index in range(count))


def careful(raw: str) -> str:
    """What a good clean-up returns: hesitations out, a capital, a full stop."""
    kept = [word for word in raw.split() if word not in ("um", "uh")]
    text = " ".join(kept)
    return text[:1].upper() + text[1:] + "."


def _never() -> str:
    raise AssertionError("clean-up is off: no key is read")


def off_path(runs: int) -> dict[str, float]:
    settings = _Off()
    threads = threading.active_count()
    began = time.perf_counter_ns()
    for _ in range(runs):
        if cleaner_for(settings, _never) is not None:
            raise AssertionError("clean-up is off")
    with_path = (time.perf_counter_ns() - began) / runs
    began = time.perf_counter_ns()
    for _ in range(runs):
        pass
    empty = (time.perf_counter_ns() - began) / runs
    return {
        "per_dictation_ns": round(with_path, 1),
        "empty_loop_ns": round(empty, 1),
        "threads_started": threading.active_count() - threads,
    }


def guard_costs(runs: int) -> dict[str, dict[str, float]]:
    prompt = resolve_prompt("")
    figures: dict[str, dict[str, float]] = {}
    for count in (10, 50, 200):
        raw = words(count)
        answers = {"accepted": careful(raw), "refused": careful(raw.replace(" budget", ""))}
        for kind, answer in answers.items():
            times = []
            for _ in range(runs):
                began = time.perf_counter()
                check(raw, answer, prompt)
                times.append(1000 * (time.perf_counter() - began))
            figures[f"{count}_words_{kind}"] = _spread(times)
    return figures


def round_trips(endpoint: str, model: str, runs: int) -> dict[str, object]:
    config = CleanupConfig(
        endpoint=endpoint,
        model=model,
        api_key=cleanup_key_store().get(),
        budget_ms=600_000,
        timeout_s=600.0,
    )
    cleaner = Cleaner(config)
    if not cleaner.permission.allowed:
        raise SystemExit(f"voxtray: {cleaner.permission.message}")
    figures: dict[str, object] = {}
    for count in (10, 50):
        outcomes = [cleaner.clean(words(count, run)) for run in range(runs)]
        trips = [o.timings.round_trip_ms for o in outcomes if o.timings.round_trip_ms is not None]
        guards = [o.timings.guard_ms for o in outcomes if o.timings.guard_ms is not None]
        figures[f"{count}_words"] = {
            "round_trip_ms": _spread(trips),
            "guard_ms": _spread(guards),
            "cleanup_ms": _spread([o.timings.cleanup_ms for o in outcomes]),
            "reasons": sorted({o.reason.value for o in outcomes}),
            "answer_chars": _spread([float(len(o.cleaned or "")) for o in outcomes]),
            "first_round_trip_ms": round(trips[0], 3) if trips else -1.0,
        }
    return figures


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"median": round(statistics.median(values), 3), "worst": round(max(values), 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.cleanup")
    parser.add_argument(
        "--endpoint", help="a chat endpoint to time, e.g. http://localhost:11434/v1"
    )
    parser.add_argument("--model", default="", help="the model to ask for (default: the first)")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    report: dict[str, object] = {
        "off": off_path(100_000),
        "guard_ms": guard_costs(max(args.runs, 20)),
    }
    if args.endpoint:
        report["endpoint"] = round_trips(args.endpoint, args.model, args.runs)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
