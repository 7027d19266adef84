"""int8 that gives the right words on every x86-64 CPU: 7-bit weights (reduced range), the
CPU's VNNI read at run time, and fp32 chosen where a model's int8 weights would overflow.

CPUs without VNNI (AVX2, AVX-512 without VNNI) sum pairs of int8 products in 16 bits with
saturation; full-range weights then lose words, and whisper-base heard French as Thai. The
emulated-CPU test runs the real command on a CPU without VNNI under qemu.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.support.audio import Clip
from voxtray.choices import Precision, Provider
from voxtray.inference.cpu import CpuInt8, Int8Path, host_int8, int8_path
from voxtray.inference.engines import pick_precision
from voxtray.models.quantize import REDUCED_RANGE_LIMIT, int8_exact_on_every_cpu, quantize_int8
from voxtray.models.store import INT8_EXACT, InstalledModel
from voxtray.scoring.wer import corpus_wer

SATURATING = CpuInt8(Int8Path.SATURATING)
VNNI = CpuInt8(Int8Path.VNNI, ("avx512_vnni",))
INT8_OVER_FP32 = 0.005
"""Most an int8 variant's WER may exceed its fp32 variant's on tests/data/speech."""
FRENCH = "Bonjour à tous. Aujourd'hui il fait beau, et nous allons nous promener dans le parc."


@pytest.mark.parametrize(
    ("flags", "machine", "path"),
    [
        ({"avx2", "avx512f", "avx512_vnni"}, "x86_64", Int8Path.VNNI),
        ({"avx2", "avx_vnni"}, "x86_64", Int8Path.VNNI),  # Alder Lake and later
        ({"AVX2", "AVX512VNNI"}, "x86_64", Int8Path.VNNI),  # macOS's sysctl spelling
        ({"avx2", "fma", "sse4_2"}, "x86_64", Int8Path.SATURATING),  # Zen 2/3, Haswell
        ({"avx2", "avx512f", "avx512bw"}, "AMD64", Int8Path.SATURATING),  # Skylake-X
        (set(), "x86_64", Int8Path.UNKNOWN),
        (set(), "aarch64", Int8Path.EXACT),
        ({"asimd", "asimddp"}, "arm64", Int8Path.EXACT),
    ],
)
def test_the_cpu_flags_tell_whether_full_range_int8_is_exact(
    flags: set[str], machine: str, path: Int8Path
) -> None:
    found = int8_path(flags, machine)
    assert found.path is path
    assert found.full_range_exact is (path in (Int8Path.VNNI, Int8Path.EXACT))
    assert found.describe()


def test_this_machine_is_read_from_the_operating_system() -> None:
    here = host_int8()
    if sys.platform.startswith("linux"):
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8")
        has_vnni = any(f" {flag}" in flags for flag in ("avx512_vnni", "avx_vnni", "amx_int8"))
        assert (here.path is Int8Path.VNNI) is has_vnni


def _model(variants: tuple[str, ...], *, exact: bool | None) -> InstalledModel:
    manifest: dict[str, object] = {
        "name": "m",
        "family": "whisper",
        "variants": {name: {} for name in variants},
        "files": {},
    }
    if exact is not None:
        manifest[INT8_EXACT] = exact
    return InstalledModel("m", Path("/nonexistent"), manifest)


@pytest.mark.parametrize(
    ("exact", "cpu", "provider", "expected"),
    [
        (True, SATURATING, Provider.CPU, Precision.INT8),  # reduced range: exact anywhere
        (False, SATURATING, Provider.CPU, Precision.FP32),  # full range would overflow
        (None, SATURATING, Provider.CPU, Precision.FP32),  # installed before it was known
        (False, VNNI, Provider.CPU, Precision.INT8),
        (None, CpuInt8(Int8Path.UNKNOWN), Provider.CPU, Precision.FP32),
        (True, VNNI, Provider.CUDA, Precision.FP32),  # int8 ops run on the CPU under CUDA
    ],
)
def test_auto_precision_avoids_int8_that_would_overflow_here(
    exact: bool | None, cpu: CpuInt8, provider: str, expected: str
) -> None:
    model = _model(("fp32", "int8"), exact=exact)
    assert pick_precision(model, Precision.AUTO, provider, cpu) == expected


def test_an_int8_only_model_keeps_int8_and_an_asked_precision_is_kept() -> None:
    assert pick_precision(_model(("int8",), exact=False), Precision.AUTO, "cpu", SATURATING) == (
        "int8"
    )
    both = _model(("fp32", "int8"), exact=False)
    assert pick_precision(both, Precision.INT8, "cpu", SATURATING) == "int8"


def _matmul_model(path: Path) -> None:
    rng = np.random.default_rng(7)
    weight = numpy_helper.from_array(rng.normal(size=(64, 32)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))


def test_quantised_weights_are_seven_bits_and_read_back_as_such(tmp_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source, ours, full = tmp_path / "f.onnx", tmp_path / "ours.onnx", tmp_path / "full.onnx"
    _matmul_model(source)
    quantize_int8(source, ours)
    quantize_dynamic(str(source), str(full), weight_type=QuantType.QInt8, per_channel=True)
    weights = [
        numpy_helper.to_array(t)
        for t in onnx.load(str(ours)).graph.initializer
        if t.data_type == TensorProto.INT8
    ]
    assert weights
    assert max(int(np.abs(w.astype(np.int16)).max()) for w in weights) <= (REDUCED_RANGE_LIMIT)
    assert int8_exact_on_every_cpu([ours])
    assert not int8_exact_on_every_cpu([full])
    assert int8_exact_on_every_cpu([source])  # no int8 weights at all


@pytest.mark.slow
@pytest.mark.parametrize("model_fixture", ["tiny_en", "whisper_base"])
def test_the_converted_models_int8_is_exact_on_every_cpu(
    model_fixture: str, request: pytest.FixtureRequest
) -> None:
    model: InstalledModel = request.getfixturevalue(model_fixture)
    assert model.int8_exact_everywhere
    files = model.variant_files("int8")
    assert int8_exact_on_every_cpu([files["encoder"], files["decoder"]])
    # so auto takes int8 on a CPU without VNNI as on one with it
    assert pick_precision(model, Precision.AUTO, "cpu", SATURATING) == "int8"


def _transcribe(
    model: InstalledModel,
    engine: str,
    precision: str,
    files: list[Path],
    *,
    cpu: str = "",
    language: str = "en",
) -> list[dict[str, object]]:
    command = [sys.executable, "-m", "voxtray", "transcribe", *map(str, files), "--json"]
    command += ["--language", language]
    command += ["--model", model.name, "--engine", engine, "--precision", precision]
    prefix = ["qemu-x86_64", "-cpu", cpu] if cpu else []
    env = {**os.environ, "VOXTRAY_HOME": str(model.path.parents[1])}
    result = subprocess.run(
        [*prefix, *command], env=env, capture_output=True, text=True, timeout=1800, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ort", "sherpa"])
@pytest.mark.parametrize("model_fixture", ["tiny_en", "whisper_base"])
def test_int8_wer_is_within_half_a_point_of_fp32(
    model_fixture: str, engine: str, request: pytest.FixtureRequest, eval_clips: list[Clip]
) -> None:
    model: InstalledModel = request.getfixturevalue(model_fixture)
    paths = [clip.path for clip in eval_clips]
    references = [clip.reference for clip in eval_clips]
    rates = {}
    for precision in ("fp32", "int8"):
        results = _transcribe(model, engine, precision, paths)
        texts = [str(r["text"]) for r in results]
        rates[precision] = corpus_wer(zip(references, texts, strict=True)).rate
    print(f"\n{model.name} {engine}: {rates}", file=sys.stderr)
    assert rates["int8"] <= rates["fp32"] + INT8_OVER_FP32


def _no_vnni_runner() -> str:
    """'' where this CPU lacks VNNI itself; else a CPU model qemu emulates without it."""
    if not host_int8().full_range_exact:
        return ""
    if shutil.which("qemu-x86_64") is None:
        pytest.skip("qemu-user is not installed (packaging/dev.sh installs it)")
    return "Haswell"  # AVX2 and FMA, no AVX-512, no VNNI


@pytest.mark.slow
def test_whisper_base_hears_french_on_a_cpu_without_vnni(
    whisper_base: InstalledModel, tmp_path: Path
) -> None:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (packaging/dev.sh installs it)")
    speech = tmp_path / "fr.wav"
    subprocess.run(["espeak-ng", "-v", "fr", "-w", str(speech), FRENCH], check=True)
    # With full-range int8 weights this CPU heard Thai and wrote Thai script.
    runner = _no_vnni_runner()
    (result,) = _transcribe(whisper_base, "sherpa", "int8", [speech], cpu=runner, language="auto")
    assert result["language"] == "fr"
    text = str(result["text"])
    assert sum(ch.isascii() or ch in "àâçéèêëîïôûùüÿœ" for ch in text) >= 0.95 * len(text)
