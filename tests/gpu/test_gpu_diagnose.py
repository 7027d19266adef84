"""The GPU diagnosis, run for real on this machine (no NVIDIA driver, onnxruntime-gpu for
CUDA 13 without its CUDA libraries): driver, build, libraries, real sessions, placement.

Tests that state an absence (no driver, a missing library, a fallback) skip on a machine
where that thing is present, so the file also runs on a working GPU box.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from voxtray.gpu import builds, checks, cuda_setup, nvml, probe
from voxtray.gpu import diagnose as dg
from voxtray.gpu.builds import CPU, CUDA
from voxtray.gpu.checks import visible_devices
from voxtray.gpu.native_log import capture_native_stderr

CUDA_CPU = [CUDA, CPU]
INT8_OPS = {
    "MatMulInteger",
    "DynamicQuantizeLinear",
    "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat",
}
BUILD = builds.ort_build_info()


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def _matmul_graph(dtype: type[np.floating]) -> onnx.GraphProto:
    elem = TensorProto.FLOAT16 if dtype is np.float16 else TensorProto.FLOAT
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(dtype), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])]
    inputs = [helper.make_tensor_value_info("x", elem, [4, 64])]
    outputs = [helper.make_tensor_value_info("z", elem, [4, 32])]
    return helper.make_graph(nodes, "matmul", inputs, outputs, [weight])


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = tmp_path_factory.mktemp("models")
    values = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "abc"]
    add = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "add", values[:2], values[2:]
    )
    fp32 = _save(_matmul_graph(np.float32), folder / "fp32.onnx")
    int8 = folder / "int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return {
        "add": _save(add, folder / "add.onnx"),
        "fp32": fp32,
        "int8": int8,
        "fp16": _save(_matmul_graph(np.float16), folder / "fp16.onnx"),
    }


def _cuda_runs(model: Path) -> bool:
    with capture_native_stderr():
        session = ort.InferenceSession(str(model), providers=CUDA_CPU)
    return bool(session.get_providers()[0] == CUDA)


def _driver_present() -> bool:
    return nvml.gpus() != [] or Path("/proc/driver/nvidia/version").exists()


# --- Native log of a real session ---------------------------------------------------------


def test_native_stderr_captures_onnxruntime_cuda_failure(models: dict[str, Path]) -> None:
    with capture_native_stderr() as captured:
        session = ort.InferenceSession(str(models["add"]), providers=CUDA_CPU)
    if session.get_providers()[0] == CUDA:
        pytest.skip("CUDA works on this machine")
    assert "Failed to create CUDAExecutionProvider" in captured.text
    assert "libonnxruntime_providers_cuda" in captured.text


# --- Driver, build, libraries, sherpa ------------------------------------------------------


def test_no_driver_fails_driver_check_with_driver_fix() -> None:
    if _driver_present():
        pytest.skip("an NVIDIA driver is installed here")
    check = checks.nvidia_driver()
    assert check.ok is False
    assert check.detail.startswith("no NVIDIA driver")
    assert "NVMLError_LibraryNotFound" in check.detail
    assert check.fix is not None
    assert "NVIDIA driver" in check.fix
    if BUILD.cuda_major == 13:
        assert "580 or newer" in check.fix
    assert nvml.gpus() == []


def test_onnxruntime_build_is_the_gpu_package_for_cuda_13() -> None:
    from onnxruntime.capi import build_and_package_info as info

    assert BUILD.package == info.package_name
    assert BUILD.cuda_version == info.cuda_version
    assert BUILD.version == ort.__version__
    assert BUILD.package == "onnxruntime-gpu"
    assert BUILD.cuda_major == 13
    assert BUILD.cudnn_major == 9
    assert BUILD.installed == [f"onnxruntime-gpu {ort.__version__}"]
    assert CUDA in BUILD.available
    check = checks.onnxruntime_build()
    assert check.ok is True
    assert "built for CUDA 13" in check.detail


def test_cuda_libraries_name_the_missing_files_with_a_pip_fix() -> None:
    assert BUILD.cuda_major is not None
    found = {check.name: check for check in checks.cuda_libraries()}
    expected = cuda_setup.cuda_library_names(BUILD.cuda_major, BUILD.cudnn_major)
    assert list(found)[: len(expected)] == expected
    cublaslt = found["libcublasLt.so.13"]
    if cublaslt.ok:
        pytest.skip("cuBLASLt for CUDA 13 is installed here")
    assert cublaslt.required
    assert "not found" in cublaslt.detail
    assert cublaslt.fix == 'pip install "voxtray[cuda]" (or just: pip install nvidia-cublas)'
    assert found["libcudnn.so.9"].fix is not None
    assert "nvidia-cudnn-cu13" in found["libcudnn.so.9"].fix
    assert found["libcufft.so.12"].required is False


def test_elf_needed_reads_the_cuda_provider_links() -> None:
    provider = cuda_setup.provider_files("cuda")[0]
    needed = cuda_setup.elf_needed(provider)
    assert {"libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13"} <= set(needed)
    assert cuda_setup.elf_needed(Path(__file__)) == []


def test_sherpa_build_has_no_cuda_provider() -> None:
    check = checks.sherpa_build()
    if check.ok:
        pytest.skip("this sherpa-onnx carries a CUDA provider")
    assert check.ok is False
    assert "CPU-only" in check.detail
    assert "no CUDA provider" in check.detail
    assert check.fix is not None
    assert "SHERPA_ONNX_ENABLE_GPU" in check.fix


# --- Real sessions -------------------------------------------------------------------------


def test_cuda_session_falls_back_to_cpu_and_names_the_missing_library(
    models: dict[str, Path],
) -> None:
    if _cuda_runs(models["add"]):
        pytest.skip("CUDA works on this machine")
    outcome = probe.session_providers(models["add"], CUDA_CPU)
    assert outcome.providers_requested == CUDA_CPU
    assert outcome.providers_active == [CPU]
    assert outcome.fallback is True
    assert outcome.error is None
    assert any("Failed to create CUDAExecutionProvider" in line for line in outcome.log_lines)
    assert outcome.cause is not None
    missing = re.search(r"missing (\S+) \(the CUDA provider", outcome.cause)
    assert missing is not None, outcome.cause
    failing = {c.name for c in checks.cuda_libraries() if c.ok is False}
    assert missing.group(1) in failing
    assert outcome.fix is not None
    assert 'pip install "voxtray[cuda]"' in outcome.fix


def test_cpu_session_is_no_fallback(models: dict[str, Path]) -> None:
    outcome = probe.session_providers(models["add"], [CPU])
    assert outcome.providers_active == [CPU]
    assert outcome.fallback is False
    assert outcome.cause is None


def test_session_on_a_broken_model_reports_the_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    outcome = probe.session_providers(broken, CUDA_CPU)
    assert outcome.providers_active == []
    assert outcome.error is not None
    assert probe.node_placement(broken, CUDA_CPU) == {}
    assert probe.model_precision(broken) == "unknown"


def test_int8_placement_lists_quantised_ops_on_cpu(models: dict[str, Path]) -> None:
    placement = probe.node_placement(models["int8"], CUDA_CPU)
    assert INT8_OPS & set(placement[CPU])
    cpu_only = probe.node_placement(models["int8"], [CPU])
    assert list(cpu_only) == [CPU]
    assert "DynamicQuantizeMatMul" in cpu_only[CPU]  # onnxruntime's CPU fusion


def test_model_precision(models: dict[str, Path]) -> None:
    assert probe.model_precision(models["fp32"]) == "fp32"
    assert probe.model_precision(models["int8"]) == "int8"
    assert probe.model_precision(models["fp16"]) == "fp16"


def test_diagnose_cuda_without_driver(models: dict[str, Path]) -> None:
    if _driver_present() or _cuda_runs(models["add"]):
        pytest.skip("an NVIDIA driver is installed here")
    diagnosis = dg.diagnose("cuda", models["int8"])
    data = json.loads(diagnosis.to_json())
    assert data["providers_requested"] == CUDA_CPU
    assert data["fallback"] is True
    assert data["cause"].startswith("no NVIDIA driver")
    assert "580 or newer" in data["fixes"][0]
    assert any('pip install "voxtray[cuda]"' in fix for fix in data["fixes"])
    assert data["fix"] == "; then ".join(data["fixes"])
    assert data["precision"] == "int8"
    assert data["probe"]["cause"].startswith("missing lib")
    assert any(note.startswith("int8 model") for note in data["notes"])
    assert data["gpus"] == []


def test_diagnose_cpu_has_nothing_to_fix() -> None:
    diagnosis = dg.diagnose("cpu")
    assert diagnosis.providers_requested == [CPU]
    assert diagnosis.fallback is False
    assert diagnosis.cause is None
    assert diagnosis.fix is None
    assert diagnosis.libraries == []
    assert diagnosis.placement == {CPU: ["Add"]}


# --- Names and packages --------------------------------------------------------------------


def test_library_names_per_platform() -> None:
    assert cuda_setup.cuda_library_names(13, 9, windows=True) == [
        "nvcuda.dll",
        "cudart64_13.dll",
        "cublasLt64_13.dll",
        "cublas64_13.dll",
        "curand64_10.dll",
        "cudnn64_9.dll",
        "cufft64_12.dll",
        "nvrtc64_130_0.dll",
    ]
    assert "libcufft.so.11" in cuda_setup.cuda_library_names(12, 9)


def test_pip_packages_follow_nvidia_naming() -> None:
    assert cuda_setup.pip_package("libcublasLt.so.13", 13) == "nvidia-cublas"
    assert cuda_setup.pip_package("cublas64_12.dll", 12) == "nvidia-cublas-cu12"
    assert cuda_setup.pip_package("libcudart.so.13", 13) == "nvidia-cuda-runtime"
    assert cuda_setup.pip_package("libcudnn.so.9", 13) == "nvidia-cudnn-cu13"
    assert cuda_setup.pip_package("libcudnn_ops.so.9", 12) == "nvidia-cudnn-cu12"
    assert cuda_setup.pip_package("libnvinfer.so.10", 13) == "tensorrt-cu13-libs==10.*"
    assert cuda_setup.pip_package("nvinfer_10.dll", 12) == "tensorrt-cu12-libs==10.*"
    assert cuda_setup.pip_package("libcuda.so.1", 13) is None


@pytest.mark.parametrize(
    ("value", "index", "hidden"),
    [
        (None, 0, False),
        ("", 0, True),
        ("0", 0, False),
        ("0", 1, True),
        ("1,0", 1, False),
        ("-1", 0, True),
        ("0,-1,1", 1, True),
    ],
)
def test_cuda_visible_devices_that_hide_the_card_are_named(
    value: str | None, index: int, hidden: bool
) -> None:
    """NVML sees the card whatever CUDA_VISIBLE_DEVICES says, so the driver check passes;
    the variable itself must be named, with the fix."""
    environ = {} if value is None else {"CUDA_VISIBLE_DEVICES": value}
    check = visible_devices(index, environ)
    assert (check is not None) is hidden
    if check is not None:
        assert check.ok is False
        assert repr(value) in check.detail
        assert check.fix is not None
        assert f"CUDA_VISIBLE_DEVICES={index}" in check.fix
