"""Reading onnxruntime's native log: capturing file descriptor 2, and turning recorded
onnxruntime lines into causes and fixes."""

from __future__ import annotations

import os
import threading

import pytest

from voxtray.gpu import native_log
from voxtray.gpu.builds import CPU, CUDA, TENSORRT
from voxtray.gpu.native_log import NativeCapture, capture_native_stderr, stdout_to_stderr

CUDA_CPU = [CUDA, CPU]


# --- capture_native_stderr -----------------------------------------------------------------


ORT_LINE = "2026-11-24 08:14:18.123456789 [W:onnxruntime:, session_state.cc:1280] marker\n"


def test_native_stderr_is_captured_not_printed(capfd: pytest.CaptureFixture[str]) -> None:
    with capture_native_stderr() as captured:
        os.write(2, ORT_LINE.encode())
    os.write(2, b"after-the-block\n")
    assert captured.text == ORT_LINE
    err = capfd.readouterr().err
    assert "marker" not in err
    assert "after-the-block" in err  # descriptor 2 is back where it was


def test_other_writers_lines_are_given_back(capfd: pytest.CaptureFixture[str]) -> None:
    """Another thread's warning written during a model load reaches the terminal."""
    with capture_native_stderr() as captured:
        os.write(2, ORT_LINE.encode())
        os.write(2, b"*************** EP Error ***************\n")
        worker = threading.Thread(target=os.write, args=(2, b"Traceback: elsewhere\n"))
        worker.start()
        worker.join()
    assert "Traceback: elsewhere" in captured.text
    err = capfd.readouterr().err
    assert err == "Traceback: elsewhere\n"


def test_stdout_goes_to_stderr_inside_the_block(capfd: pytest.CaptureFixture[str]) -> None:
    with stdout_to_stderr():
        os.write(1, b"native-banner\n")
        print("python-banner")
    os.write(1, b"result\n")
    out, err = capfd.readouterr()
    assert out == "result\n"  # descriptor 1 is back where it was
    assert "native-banner" in err
    assert "python-banner" in err


def test_capture_takes_stdout_too(capfd: pytest.CaptureFixture[str]) -> None:
    with capture_native_stderr() as captured:
        os.write(1, b"****************************************\n")
        print("EP Error ... Falling back")
    assert "*****\n" in captured.text
    assert "EP Error ... Falling back" in captured.text
    out, err = capfd.readouterr()
    assert out == ""
    assert err == ""


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
    # The inner capture gives back what is not a native log line, so the outer one sees it.
    assert outer.text == "outer\ninner\n"


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


def _parse(text: str, available: list[str] | None = None) -> list[native_log.Finding]:
    lines = native_log.relevant_lines(text)
    return native_log.parse_provider_log(lines, CUDA_CPU, available or [CUDA, CPU], 13)


def test_relevant_lines_drop_colours_and_timestamps() -> None:
    lines = native_log.relevant_lines(
        _load_failure(CUDA_LIB, "libcublasLt.so.13") + "\nnoise\n" + REQUIRE
    )
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
    findings = _parse(warning, available=[CPU])
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
    lines = native_log.relevant_lines(text)
    requested = [TENSORRT, *CUDA_CPU]
    findings = native_log.parse_provider_log(lines, requested, requested, 13)
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
    placement, single = native_log.parse_node_placement(lines)
    assert single is None
    assert placement == {
        CUDA: ["Mul", "Relu"],
        CPU: ["DynamicQuantizeLinear", "MatMulInteger"],
    }
    all_cpu = [f"{prefix}  All nodes placed on [CPUExecutionProvider]. Number of nodes: 2"]
    assert native_log.parse_node_placement(all_cpu) == ({CPU: []}, CPU)
