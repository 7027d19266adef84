"""device-run's results: summary.txt, summary.json and results.tar.xz with every step's
JSON and log."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from tools.gpu import kit
from tools.gpu.steps import Step


def summary_text(steps: list[Step], gpu: bool, total_s: float) -> str:
    lines = [
        f"voxtray GPU kit: {'a GPU was found' if gpu else 'no GPU on this machine'}; "
        f"{total_s:.0f} s"
    ]
    for step in steps:
        lines.append(f"{step.name:<30} {step.status:<8} {step.seconds:>6.1f} s  {step.detail}")
    figures = [s for s in steps if s.name.startswith(("selftest", "fallback")) and s.result]
    first = next((s.result for s in figures if s.result.get("gpu")), None)
    if first is not None:
        card = first["gpu"]
        lines.append(
            f"card: {card.get('name')}, {card.get('memory_total_mb')} MiB, compute capability "
            f"{card.get('compute_capability')}; {first.get('driver')}; {first.get('onnxruntime')}"
        )
    for step in figures:
        r = step.result
        gpu_name = (r.get("gpu") or {}).get("name")
        memory = r.get("gpu_memory") or {}
        lines.append(
            f"  {step.name}: {r['verdict']} on {r.get('ran_on')}; speedup {r.get('speedup')}; "
            f"cpu {r.get('cpu_cold_ms')}/{r.get('cpu_warm_ms')} ms, "
            f"gpu {r.get('gpu_cold_ms')}/{r.get('gpu_warm_ms')} ms (cold/warm); "
            f"GPU {gpu_name or '-'}, {memory.get('process_mb', '-')} of "
            f"{memory.get('total_mb', '-')} MiB; as expected: {r.get('as_expected')}"
        )
        if r.get("cause"):
            lines.append(f"    cause: {r['cause']}")
        if r.get("fix"):
            lines.append(f"    fix: {r['fix']}")
    int8 = next((s.result for s in steps if s.name == "selftest-int8-cuda" and s.result), None)
    fp32 = next((s.result for s in steps if s.name == "selftest-fp32-cuda" and s.result), None)
    if int8 and fp32 and int8.get("gpu_warm_ms") and fp32.get("gpu_warm_ms"):
        lines.append(
            f"  int8 on cuda: {int8['gpu_warm_ms'] / fp32['gpu_warm_ms']:.2f}x fp32 on cuda, "
            f"{int8['gpu_warm_ms'] / int8['cpu_warm_ms']:.2f}x int8 on the CPU (warm); "
            f"placement {json.dumps(int8.get('placement'))}"
        )
    for step in steps:
        if step.name == "bench-matrix" and step.result.get("cells"):
            for c in step.result["cells"]:
                lines.append(
                    f"  {c['model']} {c['precision']} {c['requested']}->{c['provider']}: "
                    f"cold {c['cold_ms']} ms warm {c['warm_ms']} ms RTF {c['rtf']} "
                    f"WER {c['wer']} broken {c['broken']}"
                )
        if step.name.startswith("serve-"):
            for row in step.result.get("levels", []):
                lines.append(
                    f"  {step.name} {row['clients']:>2} clients: {row['requests_per_s']} req/s, "
                    f"p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, {row['statuses']}, "
                    f"GPU memory {row.get('gpu_memory')}"
                )
    return "\n".join(lines) + "\n"


def write_results(steps: list[Step], out: Path, results: Path, gpu: bool, total_s: float) -> None:
    data = {
        "gpu": gpu,
        "total_s": round(total_s, 1),
        "steps": [step.__dict__ for step in steps],
    }
    kit.write_json(results / "summary.json", data)
    text = summary_text(steps, gpu, total_s)
    (results / "summary.txt").write_text(text, encoding="utf-8")
    with tarfile.open(results / "results.tar.xz", "w:xz") as tar:
        tar.add(out, arcname="results")
    print(text, flush=True)
