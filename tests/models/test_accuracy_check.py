"""The accuracy check of "Measure on this machine" and `voxtray selftest`: the shipped
clip decoded and scored, and a precision that hears wrong words flagged and avoided.

The broken precision is a real model that loads and runs: whisper-tiny.en whose int8
variant reads a token table with its words shuffled, so it hears speech and writes other
words, as int8 arithmetic that overflows does.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from voxtray.choices import Precision, Provider
from voxtray.inference.accuracy import WRONG_TEXT_WER, accuracy_clip, check_clip
from voxtray.inference.assembly import load_recognizer
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.measure import measure_all
from voxtray.inference.measured_here import precisions_to_avoid
from voxtray.inference.selftest import Verdict, run_selftest
from voxtray.models.catalog import load_catalog
from voxtray.models.measurements import default_cache
from voxtray.models.recommend import recommend
from voxtray.models.store import InstalledModel, ModelStore

pytestmark = pytest.mark.slow
CPU = EngineChoice(provider=Provider.CPU)


@pytest.mark.parametrize("precision", ["int8", "fp32"])
@pytest.mark.parametrize("engine", ["ort", "sherpa"])
def test_the_clip_is_heard_right_by_a_sound_model(
    tiny_en: InstalledModel, engine: str, precision: str
) -> None:
    recognizer = create_recognizer(
        tiny_en, EngineChoice(engine=engine, provider="cpu", precision=precision)
    )
    heard = check_clip(recognizer)
    _, reference = accuracy_clip()
    assert len(reference.split()) == 17
    assert heard.wer <= 1 / 17, heard  # a word at most; every set-up measured gets all 17
    assert not heard.wrong


def _shuffled_tokens(source: Path, target: Path) -> None:
    """The token table (`<base64 of the bytes> <id>` a line) with the bytes shuffled."""
    rows = [line.split() for line in source.read_text(encoding="utf-8").splitlines()]
    spelled = [spelling for spelling, _ in rows]
    random.Random(4).shuffle(spelled)
    lines = [f"{spelling} {index}" for spelling, (_, index) in zip(spelled, rows, strict=True)]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def broken_int8(tiny_en: InstalledModel, voxtray_home: Path) -> InstalledModel:
    """whisper-tiny.en in this test's store, its int8 variant hearing other words."""
    folder = voxtray_home / "models" / tiny_en.name
    shutil.copytree(tiny_en.path, folder, ignore=shutil.ignore_patterns("ct2"))
    _shuffled_tokens(folder / "tiny.en-tokens.txt", folder / "tiny.en-tokens.shuffled.txt")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["variants"]["int8"]["tokens"] = "tiny.en-tokens.shuffled.txt"
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return ModelStore(voxtray_home / "models", load_catalog()).require(tiny_en.name)


def test_the_broken_precision_hears_wrong_words(broken_int8: InstalledModel) -> None:
    int8 = create_recognizer(broken_int8, EngineChoice(provider="cpu", precision="int8"))
    heard = check_clip(int8)
    assert heard.wer > WRONG_TEXT_WER
    assert heard.wrong


def test_measuring_flags_the_precision_and_auto_avoids_it(broken_int8: InstalledModel) -> None:
    said: list[str] = []
    measured = measure_all([broken_int8], CPU, progress=said.append, runs=1)
    (result,) = measured.results
    assert result.precision == "fp32"
    assert not result.wrong_text
    assert said == [
        f"measuring {broken_int8.name}",
        f"measuring {broken_int8.name} in fp32: int8 gives wrong words here",
    ]
    kept = default_cache().load()
    flagged = kept[f"{broken_int8.name}|int8|cpu"]
    assert flagged.wrong_text
    assert flagged.wer > WRONG_TEXT_WER
    assert precisions_to_avoid(broken_int8, "cpu") == {"int8"}
    # dictation loads fp32 from now on: it hears the clip right
    assert not check_clip(load_recognizer(broken_int8, CPU, warm=False)).wrong
    # and the recommendation never names a measurement of wrong words
    advice = recommend([flagged], 300, load_catalog())
    assert advice.pick is None
    # measured again later, it keeps the fp32 result without measuring the int8 again
    again = measure_all([broken_int8], CPU, progress=said.append, runs=1)
    assert [m.precision for m in again.results] == ["fp32"]
    assert len(said) == 2


def test_an_asked_precision_is_measured_as_asked(broken_int8: InstalledModel) -> None:
    asked = EngineChoice(provider=Provider.CPU, precision=Precision.INT8)
    (result,) = measure_all([broken_int8], asked, runs=1).results
    assert result.precision == "int8"
    assert result.wrong_text


def test_the_selftest_says_so_and_goes_on_in_fp32(broken_int8: InstalledModel) -> None:
    report = run_selftest(broken_int8, Provider.CPU, runs=1)
    assert report.verdict is Verdict.CPU_OK
    assert report.precision == "fp32"
    assert "int8 heard" in report.notes[0]
    assert report.cpu.wer <= 1 / 17
    asked = run_selftest(broken_int8, Provider.CPU, precision=Precision.INT8, runs=1)
    assert asked.verdict is Verdict.WRONG_WORDS
    assert asked.exit_code != 0
    assert "accuracy clip" in asked.text_report()


def test_the_selftest_command_reports_the_accuracy(
    broken_int8: InstalledModel, voxtray_home: Path
) -> None:
    command = [sys.executable, "-m", "voxtray", "selftest", "--provider", "cpu", "--json"]
    command += ["--model", broken_int8.name, "--precision", "int8", "--runs", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    report = json.loads(result.stdout)
    assert report["verdict"] == "wrong-words"
    assert report["cpu"]["wer"] > WRONG_TEXT_WER
    assert result.returncode == report["exit_code"] != 0
