"""measurements.json entries as Voxtray writes them, with changes, for tests that hand the
app and the command a damaged or hostile file."""

from __future__ import annotations

import json
from collections.abc import Mapping

from voxtray.inference.measured_here import machine_fingerprint
from voxtray.models.measurements import Measurement, cache_key

STAMP = "2025-01-01T00:00:00Z/3"


def written_entry(model: str, stamp: str = STAMP, **changes: object) -> dict[str, object]:
    """The entry a measurement of `model` (installed as `stamp`) on this machine on the
    CPU leaves, with `changes` made; with the real stamp it is current, so it is used as
    it stands unless it is refused."""
    written = Measurement(
        model=model,
        precision="int8",
        requested="cpu",
        provider="cpu",
        latency_ms=100.0,
        rtf=0.02,
        load_ms=200.0,
        memory_mb=40.0,
        text="Hello.",
        model_stamp=stamp,
        fingerprint=machine_fingerprint(),
        measured_at="2025-01-01T00:00:00Z",
        wer=0.0,
        wrong_text=False,
    ).to_json()
    return {**written, **changes}


def key_of(model: str) -> str:
    """The key Voxtray files a CPU int8 measurement of `model` under."""
    return cache_key(model, "int8", "cpu")


def measurements_json(results: Mapping[str, object]) -> bytes:
    """A measurements.json holding `results` (key: entry)."""
    return json.dumps({"format": 2, "results": dict(results)}).encode()
