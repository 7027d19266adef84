"""The recommendation measures real installed models and follows the latency budget."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.support.process import run_voxtray
from voxtray.choices import Provider
from voxtray.inference import measure
from voxtray.inference.engines import EngineChoice
from voxtray.inference.measure import measure_all
from voxtray.models.measurements import MeasurementCache
from voxtray.models.recommend import format_table, recommend
from voxtray.models.store import InstalledModel, ModelStore

CPU = EngineChoice(provider=Provider.CPU, threads=2)


def test_pick_follows_the_budget_and_the_cache_follows_the_machine(
    tmp_path: Path,
    model_store: ModelStore,
    tiny_en: InstalledModel,
    whisper_base: InstalledModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = MeasurementCache(tmp_path / "measurements.json")
    said: list[str] = []
    tiny, base = measure_all(
        [tiny_en, whisper_base], CPU, cache=cache, progress=said.append, runs=2
    ).results
    assert said == ["measuring whisper-tiny.en", "measuring whisper-base"]
    for m in (tiny, base):
        assert m.provider == "cpu"
        assert m.precision == "int8"
        assert m.latency_ms > 0
        assert m.rtf == pytest.approx(m.latency_ms / 5000, rel=0.01)
        assert m.memory_mb >= 0
        assert m.text.strip()
    assert tiny.latency_ms < base.latency_ms, (tiny, base)

    tight = (tiny.latency_ms + base.latency_ms) / 2
    loose = base.latency_ms * 2
    catalog = model_store.catalog
    picked_tight = recommend([tiny, base], tight, catalog)
    picked_loose = recommend([tiny, base], loose, catalog)
    assert picked_tight.pick == tiny
    assert picked_tight.fits
    assert picked_loose.pick == base
    assert picked_loose.fits
    none_fits = recommend([tiny, base], tiny.latency_ms / 2, catalog)
    assert none_fits.pick == tiny
    assert not none_fits.fits
    better = {c.name for c in picked_loose.better}
    assert "sherpa-whisper-base" not in better
    assert "parakeet-tdt-0.6b-v2" in better
    assert "recommended here: whisper-base" in format_table(picked_loose)
    assert json.loads(json.dumps(picked_loose.to_json()))["recommended"] == "whisper-base"

    said.clear()
    again = measure_all([tiny_en, whisper_base], CPU, cache=cache, progress=said.append, runs=2)
    assert said == []
    assert again.results == [tiny, base]
    assert again.notes == []

    moved = dataclasses.replace(measure.machine_fingerprint(), onnxruntime="0.0-other")
    monkeypatch.setattr(measure, "machine_fingerprint", lambda: moved)
    remeasured = measure_all([tiny_en], CPU, cache=cache, progress=said.append, runs=1).results
    assert said == ["measuring whisper-tiny.en"]
    assert remeasured[0].fingerprint == moved
    kept = cache.load()
    assert kept["whisper-tiny.en|int8|cpu"].fingerprint == moved
    assert kept["whisper-base|int8|cpu"].fingerprint != moved


def test_an_unreadable_cache_is_measured_again(tmp_path: Path) -> None:
    path = tmp_path / "measurements.json"
    path.write_text("{not json", encoding="utf-8")
    assert MeasurementCache(path).load() == {}


def test_the_command_measures_keeps_and_recommends(
    tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "models").symlink_to(model_store.root)
    args = ("models", "recommend", "whisper-tiny.en", "--budget-ms", "10000", "--json")
    first = run_voxtray(*args, home=home)
    assert first.returncode == 0, first.stderr
    assert "measuring whisper-tiny.en" in first.stderr
    report = json.loads(first.stdout)
    assert report["recommended"] == "whisper-tiny.en"
    assert report["fits_budget"]
    assert report["measurements"][0]["provider"] == "cpu"
    assert "parakeet-tdt-0.6b-v2" in {c["name"] for c in report["could_do_better"]}
    assert (home / "measurements.json").is_file()
    again = run_voxtray(*args, home=home)
    assert "measuring" not in again.stderr
    assert json.loads(again.stdout)["measurements"] == report["measurements"]
