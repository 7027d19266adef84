"""The clean-up figures in docs/benchmarks.md (`PYTHONPATH=. python -m
tools.measure.cleanup`): what `python -m tools.bench.cleanup` prints for the
off path and the guard, and the round trip to two servers on 127.0.0.1: llama.cpp
(llama-cpp-python's server) with the tiny random-weight model the tests write, and the
deterministic chat server of the tests (the HTTP exchange alone)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.support.chat_server import running_chat_server
from tests.support.llama import llama_server_missing, serving_llama, write_tiny_model
from tools.bench.cleanup import guard_costs, off_path, round_trips

RUNS = 20


def main() -> None:
    report: dict[str, object] = {"off": off_path(100_000), "guard_ms": guard_costs(RUNS)}
    with running_chat_server() as chat:
        report["loopback_chat_server"] = round_trips(chat.url, "", RUNS)
    missing = llama_server_missing()
    if missing is not None:
        raise SystemExit(missing)
    with tempfile.TemporaryDirectory() as folder:
        model = write_tiny_model(Path(folder) / "tiny-random.gguf")
        with serving_llama(model, Path(folder) / "server.log") as server:
            report["llama_cpp_tiny_model"] = round_trips(server.url, "", RUNS)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
