"""The GPU diagnosis, run for real on this machine (no NVIDIA driver, onnxruntime-gpu for
CUDA 13 without its CUDA libraries), plus log parsing on recorded onnxruntime lines.

Tests that state an absence (no driver, a missing library, a fallback) skip on a machine
where that thing is present, so the file also runs on a working GPU box.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.gpu import diagnose as dg
from app.gpu.native_log import NativeCapture, capture_native_stderr

CUDA_CPU = [dg.CUDA, dg.CPU]
INT8_OPS = {
    "MatMulInteger",
    "DynamicQuantizeLinear",
    "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat",
}
BUILD = dg.ort_build_info()


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
    return bool(session.get_providers()[0] == dg.CUDA)


def _driver_present() -> bool:
    return dg.gpus() != [] or Path("/proc/driver/nvidia/version").exists()


# --- capture_native_stderr -----------------------------------------------------------------


def test_native_stderr_is_captured_not_printed(capfd: pytest.CaptureFixture[str]) -> None:
    with capture_native_stderr() as captured:
        os.write(2, b"voxtray-native-marker\n")
    os.write(2, b"after-the-block\n")
    assert captured.text == "voxtray-native-marker\n"
    err = capfd.readouterr().err
    assert "voxtray-native-marker" not in err
    assert "after-the-block" in err  # descriptor 2 is back where it was


def _capture_then_fail(captured: list[NativeCapture]) -> None:
    with capture_native_stderr() as capture:
        captured.append(capture)
        os.write(2, b"before the error\n")
        raise RuntimeError("boom")


def test_native_stderr_restored_after_exception(capfd: pytest.CaptureFixture[str]) -> None:
    captured: list[NativeCapture] = []
    with pytest.raises(RuntimeError, match="boom"):
        _capture_then_fail(captured)
    os.write(2, b"still-printing\n")
    assert captured[0].text == "before the error\n"
    assert "still-printing" in capfd.readouterr().err


def test_native_stderr_takes_megabytes_without_blocking() -> None:
    chunk = b"x" * 65535 + b"\n"
    with capture_native_stderr() as captured:
        for _ in range(32):
            os.write(2, chunk)
    assert len(captured.text) == 32 * len(chunk)


def test_native_stderr_nests_in_one_thread() -> None:
    with capture_native_stderr() as outer:
        os.write(2, b"outer\n")
        with capture_native_stderr() as inner:
            os.write(2, b"inner\n")
    assert inner.text == "inner\n"
    assert outer.text == "outer\n"


def test_native_stderr_captures_onnxruntime_cuda_failure(models: dict[str, Path]) -> None:
    with capture_native_stderr() as captured:
        session = ort.InferenceSession(str(models["add"]), providers=CUDA_CPU)
    if session.get_providers()[0] == dg.CUDA:
        pytest.skip("CUDA works on this machine")
    assert "Failed to create CUDAExecutionProvider" in captured.text
    assert "libonnxruntime_providers_cuda" in captured.text


# --- Driver, build, libraries, sherpa ------------------------------------------------------


def test_no_driver_fails_driver_check_with_driver_fix() -> None:
    if _driver_present():
        pytest.skip("an NVIDIA driver is installed here")
    check = dg.nvidia_driver()
    assert check.ok is False
    assert check.detail.startswith("no NVIDIA driver")
    assert "NVMLError_LibraryNotFound" in check.detail
    assert check.fix is not None
    assert "NVIDIA driver" in check.fix
    if BUILD.cuda_major == 13:
        assert "580 or newer" in check.fix
    assert dg.gpus() == []


def test_onnxruntime_build_is_the_gpu_package_for_cuda_13() -> None:
    from onnxruntime.capi import build_and_package_info as info

    assert BUILD.package == info.package_name
    assert BUILD.cuda_version == info.cuda_version
    assert BUILD.version == ort.__version__
    assert BUILD.package == "onnxruntime-gpu"
    assert BUILD.cuda_major == 13
    assert BUILD.cudnn_major == 9
    assert BUILD.installed == [f"onnxruntime-gpu {ort.__version__}"]
    assert dg.CUDA in BUILD.available
    check = dg.onnxruntime_build()
    assert check.ok is True
    assert "built for CUDA 13" in check.detail


def test_cuda_libraries_name_the_missing_files_with_a_pip_fix() -> None:
    assert BUILD.cuda_major is not None
    checks = {check.name: check for check in dg.cuda_libraries()}
    expected = dg.cuda_library_names(BUILD.cuda_major, BUILD.cudnn_major)
    assert list(checks)[: len(expected)] == expected
    cublaslt = checks["libcublasLt.so.13"]
    if cublaslt.ok:
        pytest.skip("cuBLASLt for CUDA 13 is installed here")
    assert cublaslt.required
    assert "not found" in cublaslt.detail
    assert cublaslt.fix == 'pip install "voxtray[cuda]" (or just: pip install nvidia-cublas)'
    assert checks["libcudnn.so.9"].fix is not None
    assert "nvidia-cudnn-cu13" in checks["libcudnn.so.9"].fix
    assert checks["libcufft.so.12"].required is False


def test_elf_needed_reads_the_cuda_provider_links() -> None:
    provider = dg._provider_files("cuda")[0]
    needed = dg.elf_needed(provider)
    assert {"libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13"} <= set(needed)
    assert dg.elf_needed(Path(__file__)) == []


def test_sherpa_build_has_no_cuda_provider() -> None:
    check = dg.sherpa_build()
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
    probe = dg.session_providers(models["add"], CUDA_CPU)
    assert probe.providers_requested == CUDA_CPU
    assert probe.providers_active == [dg.CPU]
    assert probe.fallback is True
    assert probe.error is None
    assert any("Failed to create CUDAExecutionProvider" in line for line in probe.log_lines)
    assert probe.cause is not None
    missing = re.search(r"missing (\S+) \(the CUDA provider", probe.cause)
    assert missing is not None, probe.cause
    failing = {c.name for c in dg.cuda_libraries() if c.ok is False}
    assert missing.group(1) in failing
    assert probe.fix is not None
    assert 'pip install "voxtray[cuda]"' in probe.fix


def test_cpu_session_is_no_fallback(models: dict[str, Path]) -> None:
    probe = dg.session_providers(models["add"], [dg.CPU])
    assert probe.providers_active == [dg.CPU]
    assert probe.fallback is False
    assert probe.cause is None


def test_session_on_a_broken_model_reports_the_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    probe = dg.session_providers(broken, CUDA_CPU)
    assert probe.providers_active == []
    assert probe.error is not None
    assert dg.node_placement(broken, CUDA_CPU) == {}
    assert dg.model_precision(broken) == "unknown"


def test_int8_placement_lists_quantised_ops_on_cpu(models: dict[str, Path]) -> None:
    placement = dg.node_placement(models["int8"], CUDA_CPU)
    assert INT8_OPS & set(placement[dg.CPU])
    cpu_only = dg.node_placement(models["int8"], [dg.CPU])
    assert list(cpu_only) == [dg.CPU]
    assert "DynamicQuantizeMatMul" in cpu_only[dg.CPU]  # onnxruntime's CPU fusion


def test_model_precision(models: dict[str, Path]) -> None:
    assert dg.model_precision(models["fp32"]) == "fp32"
    assert dg.model_precision(models["int8"]) == "int8"
    assert dg.model_precision(models["fp16"]) == "fp16"


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
    assert diagnosis.providers_requested == [dg.CPU]
    assert diagnosis.fallback is False
    assert diagnosis.cause is None
    assert diagnosis.fix is None
    assert diagnosis.libraries == []
    assert diagnosis.placement == {dg.CPU: ["Add"]}


# --- Log parsing on recorded lines ---------------------------------------------------------

CUDA_LIB = "/venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime_providers_cuda.so"
TRT_LIB = "/venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime_providers_tensorrt.so"
REQUIRE = (
    "\x1b[0;93m2026-11-22 14:34:21.422410597 [W:onnxruntime:Default, "
    "onnxruntime_pybind_state.cc:1295 CreateExecutionProviderFactoryInstance] Failed to create "
    "CUDAExecutionProvider. Require cuDNN 9.* and CUDA 13.*. Please install all dependencies as "
    "mentioned in the GPU requirements page (https://onnxruntime.ai/docs/execution-providers/"
    "CUDA-ExecutionProvider.html#requirements), make sure they're in the PATH, and that your GPU "
    "is supported.\x1b[m"
)


def _load_failure(library: str, missing: str) -> str:
    return (
        "\x1b[1;31m2026-11-22 14:34:21.422341661 [E:onnxruntime:Default, "
        "provider_bridge_ort.cc:2458 operator()] /onnxruntime_src/onnxruntime/core/session/"
        "provider_bridge_ort.cc:2043 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() "
        "[ONNXRuntimeError] : 1 : FAIL : "
        f"Failed to load library {library} with error: {missing}: cannot open shared object file: "
        "No such file or directory\n\x1b[m"
    )


def _parse(text: str, available: list[str] | None = None) -> list[dg.Finding]:
    lines = dg.relevant_lines(text)
    return dg.parse_provider_log(lines, CUDA_CPU, available or [dg.CUDA, dg.CPU], 13)


def test_relevant_lines_drop_colours_and_timestamps() -> None:
    lines = dg.relevant_lines(_load_failure(CUDA_LIB, "libcublasLt.so.13") + "\nnoise\n" + REQUIRE)
    assert len(lines) == 2
    assert lines[0].startswith("[E:onnxruntime:Default")
    assert lines[1].endswith("is supported.")


def test_log_missing_library() -> None:
    findings = _parse(_load_failure(CUDA_LIB, "libcublasLt.so.13") + "\n" + REQUIRE)
    assert [f.cause for f in findings] == [
        "missing libcublasLt.so.13 (the CUDA provider cannot load)"
    ]
    assert findings[0].fix == 'pip install "voxtray[cuda]" (or just: pip install nvidia-cublas)'


def test_log_version_mismatch() -> None:
    findings = _parse(REQUIRE)
    assert len(findings) == 1
    assert findings[0].cause == (
        "CUDA/cuDNN version mismatch: the CUDA provider needs CUDA 13.* and cuDNN 9.*"
    )
    assert findings[0].fix is not None
    assert "CUDA 13.* and cuDNN 9.*" in findings[0].fix


def test_log_undefined_symbol_is_a_version_mismatch() -> None:
    line = (
        f"Failed to load library {CUDA_LIB} with error: {CUDA_LIB}: undefined symbol: cudnnFoo_v9"
    )
    findings = _parse(line)
    assert findings[0].cause == "CUDA/cuDNN version mismatch: undefined symbol: cudnnFoo_v9"


def test_log_cpu_only_build() -> None:
    warning = (
        "Specified provider 'CUDAExecutionProvider' is not in available provider names."
        "Available providers: 'CPUExecutionProvider'"
    )
    findings = _parse(warning, available=[dg.CPU])
    assert len(findings) == 1
    assert findings[0].cause.startswith("CPU-only onnxruntime build")
    assert findings[0].fix is not None
    assert "pip uninstall -y onnxruntime onnxruntime-gpu" in findings[0].fix


def test_log_tensorrt_missing() -> None:
    text = _load_failure(TRT_LIB, "libnvinfer.so.10") + (
        "\nEP Error /onnxruntime_src/onnxruntime/python/onnxruntime_pybind_state.cc:729 void "
        "onnxruntime::python::RegisterTensorRTPluginsAsCustomOps(PySessionOptions&, const "
        "onnxruntime::ProviderOptions&) Please install TensorRT libraries as mentioned in the GPU "
        "requirements page, make sure they're in the PATH or LD_LIBRARY_PATH, and that your GPU "
        "is supported.\n"
    )
    lines = dg.relevant_lines(text)
    requested = [dg.TENSORRT, *CUDA_CPU]
    findings = dg.parse_provider_log(lines, requested, requested, 13)
    assert [f.cause for f in findings] == ["TensorRT not installed: libnvinfer.so.10 is missing"]
    assert findings[0].fix is not None
    assert 'pip install "tensorrt-cu13-libs==10.*"' in findings[0].fix


def test_log_no_driver_library() -> None:
    findings = _parse(_load_failure(CUDA_LIB, "libcuda.so.1"))
    assert findings[0].cause == "no NVIDIA driver: libcuda.so.1 is missing"
    assert findings[0].fix is not None
    assert "580" in findings[0].fix


def test_log_no_cuda_device() -> None:
    line = (
        "CUDA failure 100: no CUDA-capable device is detected ; GPU=0 ; hostname=box ; "
        "file=cuda_execution_provider.cc ; line=281 ; expr=cudaSetDevice(info_.device_id);"
    )
    assert _parse(line)[0].cause == "no CUDA-capable GPU"
    old = "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version ; GPU=0"
    assert _parse(old)[0].cause == "NVIDIA driver too old for CUDA 13"


def test_log_windows_load_failure() -> None:
    line = (
        'LoadLibrary failed with error 126 "" when trying to load '
        '"C:\\venv\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"'
    )
    findings = _parse(line)
    assert findings[0].cause.startswith("a DLL that")
    assert "error 126" in findings[0].cause


def test_node_placement_log_with_split_providers() -> None:
    prefix = (
        "2026-11-22 14:34:27.9 [V:onnxruntime:, session_state.cc:1585 "
        "VerifyEachNodeIsAssignedToAnEp]"
    )
    lines = [
        f"{prefix} Node placements",
        f"{prefix}  Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 2",
        f"{prefix}   Relu (/relu)",
        f"{prefix}   Mul (/mul)",
        f"{prefix}  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 2",
        f"{prefix}   MatMulInteger (/matmul_quant)",
        f"{prefix}   DynamicQuantizeLinear (/x_quant)",
        "2026-11-22 14:34:27.9 [V:onnxruntime:, session_state.cc:193 CreateGraphInfo] done",
    ]
    placement, single = dg.parse_node_placement(lines)
    assert single is None
    assert placement == {
        dg.CUDA: ["Mul", "Relu"],
        dg.CPU: ["DynamicQuantizeLinear", "MatMulInteger"],
    }
    all_cpu = [f"{prefix}  All nodes placed on [CPUExecutionProvider]. Number of nodes: 2"]
    assert dg.parse_node_placement(all_cpu) == ({dg.CPU: []}, dg.CPU)


# --- Names and packages --------------------------------------------------------------------


def test_library_names_per_platform() -> None:
    assert dg.cuda_library_names(13, 9, windows=True) == [
        "nvcuda.dll",
        "cudart64_13.dll",
        "cublasLt64_13.dll",
        "cublas64_13.dll",
        "curand64_10.dll",
        "cudnn64_9.dll",
        "cufft64_12.dll",
        "nvrtc64_130_0.dll",
    ]
    assert "libcufft.so.11" in dg.cuda_library_names(12, 9)


def test_pip_packages_follow_nvidia_naming() -> None:
    assert dg.pip_package("libcublasLt.so.13", 13) == "nvidia-cublas"
    assert dg.pip_package("cublas64_12.dll", 12) == "nvidia-cublas-cu12"
    assert dg.pip_package("libcudart.so.13", 13) == "nvidia-cuda-runtime"
    assert dg.pip_package("libcudnn.so.9", 13) == "nvidia-cudnn-cu13"
    assert dg.pip_package("libcudnn_ops.so.9", 12) == "nvidia-cudnn-cu12"
    assert dg.pip_package("libnvinfer.so.10", 13) == "tensorrt-cu13-libs==10.*"
    assert dg.pip_package("nvinfer_10.dll", 12) == "tensorrt-cu12-libs==10.*"
    assert dg.pip_package("libcuda.so.1", 13) is None
