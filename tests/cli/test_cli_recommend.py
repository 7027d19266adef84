"""`voxtray models recommend` as a user runs it, against what can sit in the data folder:
a measurements.json that is damaged, hostile or no file at all, one that cannot be saved,
a measurement already running, budgets that are no budget, and a settings.json that is a
FIFO. Each ends in a real recommendation from a real measurement, or a usage error before
any measuring."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.audio import REPO
from tests.support.homes import home_env, linked_home
from tests.support.measurements import key_of, measurements_json, written_entry
from tests.support.process import run_voxtray
from tests.support.special_files import SAID, put_special
from voxtray.inference.measured_here import model_stamp
from voxtray.models.measurements import MeasurementCache
from voxtray.models.store import InstalledModel, ModelStore

TINY = "whisper-tiny.en"
RECOMMEND = ("models", "recommend", TINY, "--budget-ms", "10000")


@pytest.mark.parametrize("budget", ["nan", "inf", "1e309", "-300", "0", "49", "10001", "fast"])
def test_a_budget_that_is_no_budget_is_a_usage_error_before_any_measuring(
    tmp_path: Path, budget: str
) -> None:
    done = run_voxtray("models", "recommend", f"--budget-ms={budget}", home=tmp_path)
    assert done.returncode == 2, done
    assert f"argument --budget-ms: {budget!r} is not a number from 50 to 10000 ms" in done.stderr
    assert "measuring" not in done.stderr
    assert done.stdout == ""


@pytest.mark.timeout(120)
def test_a_settings_file_that_is_a_fifo_is_ignored_in_one_line(tmp_path: Path) -> None:
    put_special("fifo", tmp_path / "settings.json")
    done = run_voxtray("models", "recommend", "--json", home=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    said = f"voxtray: ignored {tmp_path / 'settings.json'}: {SAID['fifo']}; using defaults"
    assert said in done.stderr
    assert json.loads(done.stdout)["budget_ms"] == 300


def _entries(model: InstalledModel, **changes: object) -> bytes:
    """A measurements.json whose entry for `model` is current but for `changes`."""
    return measurements_json(
        {key_of(model.name): written_entry(model.name, model_stamp(model), **changes)}
    )


def _writer(data: Callable[[InstalledModel], bytes]) -> Callable[[Path, InstalledModel], None]:
    return lambda path, model: path.write_bytes(data(model))


HOSTILE: dict[str, Callable[[Path, InstalledModel], None]] = {
    "latency as text": _writer(lambda m: _entries(m, latency_ms="100")),
    "latency null": _writer(lambda m: _entries(m, latency_ms=None)),
    "latency NaN": _writer(lambda m: _entries(m, latency_ms=math.nan)),
    "latency negative": _writer(lambda m: _entries(m, latency_ms=-5.0)),
    "deep nesting": _writer(lambda m: b"[" * 100_000 + b"]" * 100_000),
    **{kind: (lambda path, _m, kind=kind: put_special(kind, path)) for kind in SAID},
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE.keys())
def test_a_hostile_measurements_file_gives_a_real_measurement(
    tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel, case: str
) -> None:
    home = linked_home(tmp_path, model_store)
    measurements = home / "measurements.json"
    HOSTILE[case](measurements, tiny_en)
    done = run_voxtray(*RECOMMEND, "--json", env=home_env(home), timeout=240)
    assert done.returncode == 0, done.stderr
    assert f"measuring {TINY}" in done.stderr
    report = json.loads(done.stdout)
    assert report["recommended"] == TINY
    [measured] = report["measurements"]
    assert math.isfinite(measured["latency_ms"])
    assert measured["latency_ms"] > 0
    if case == "folder":
        said = f"cannot write {measurements}: Is a directory; the results are not kept"
        assert said in done.stderr
        assert measurements.is_dir()
    else:
        assert MeasurementCache(measurements).read()[0].keys() == {f"{TINY}|int8|cpu"}


def test_names_with_terminal_escapes_are_never_printed_raw(
    tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel
) -> None:
    home = linked_home(tmp_path, model_store)
    (home / "measurements.json").write_bytes(_entries(tiny_en, provider="\x1b]0;owned\x07cpu"))
    done = run_voxtray(*RECOMMEND, env=home_env(home), timeout=240)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    assert "\x07" not in done.stdout + done.stderr
    assert f"recommended here: {TINY}" in done.stdout


def test_a_second_measurement_waits_for_the_first(
    tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel
) -> None:
    home = linked_home(tmp_path, model_store)
    cache = MeasurementCache(home / "measurements.json")
    with cache.turn(lambda: pytest.fail("nothing else measures")):  # "the first"
        second = subprocess.Popen(
            [sys.executable, "-m", "voxtray", *RECOMMEND, "--json"],
            env=home_env(home),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert second.stderr is not None
            first_line = second.stderr.readline()
            assert first_line == "waiting for another measurement on this machine to finish\n"
            assert second.poll() is None
        except BaseException:
            second.kill()
            second.wait()
            raise
    stdout, stderr = second.communicate(timeout=240)
    assert second.returncode == 0, stderr
    assert stderr.splitlines()[0] == f"measuring {TINY}"
    assert json.loads(stdout)["recommended"] == TINY
