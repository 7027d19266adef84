"""How long a history search takes over N entries: `python -m tools.bench.history_search`.

Prints one JSON object (milliseconds per search, median and worst, per query kind)."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from voxtray.history.store import History

_TEXT = (
    "meeting report tomorrow send email budget review draft please call Anneliese "
    "project deadline weather coffee schedule invoice thanks quarterly numbers update "
    "kubernetes cluster deploy lunch friday client proposal summary notes agenda"
)
_WORDS = tuple(_TEXT.split())
_QUERIES = {"word": "report", "prefix": "kub", "two words": "send budget", "rare": "zyxwv"}


def measure(entries: int, repeats: int = 50, seed: int = 1) -> dict[str, object]:
    rng = random.Random(seed)  # noqa: S311
    with tempfile.TemporaryDirectory() as folder, History(Path(folder) / "h.sqlite3") as history:
        for _ in range(entries):
            text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 40)))
            history.add(text, model="m", engine="ort", provider="cpu", audio_s=3.0, timings={})
        results: dict[str, object] = {"entries": entries, "repeats": repeats}
        for name, query in (("all (no text)", ""), *_QUERIES.items()):
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                history.search(query, limit=200)
                times.append((time.perf_counter() - start) * 1000)
            results[name] = {
                "median_ms": round(statistics.median(times), 3),
                "max_ms": round(max(times), 3),
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    print(json.dumps(measure(args.entries, args.repeats), indent=2))


if __name__ == "__main__":
    main()
