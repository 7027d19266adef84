"""The CUDA add-on of the Linux packages: onnxruntime's provider library missing beside it is
named as the cause, with the install command of the way Voxtray was installed. The real
packages are checked on a clean Debian in tests/bundle/test_packages.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from voxtray.gpu import fixes
from voxtray.gpu.builds import CPU, CUDA, missing_provider_library
from voxtray.gpu.native_log import parse_provider_log


def _capi(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "capi"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes(b"\x7fELF")
    return folder


def test_a_gpu_build_without_its_cuda_provider_is_named(tmp_path: Path) -> None:
    capi = _capi(tmp_path, "libonnxruntime_providers_shared.so")
    assert missing_provider_library("cuda", capi) == "libonnxruntime_providers_cuda.so"
    assert missing_provider_library("auto", capi) == "libonnxruntime_providers_cuda.so"
    assert missing_provider_library("tensorrt", capi) == "libonnxruntime_providers_tensorrt.so"
    assert missing_provider_library("cpu", capi) is None


def test_a_complete_or_cpu_only_build_is_not_blamed(tmp_path: Path) -> None:
    both = _capi(tmp_path, "libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so")
    assert missing_provider_library("cuda", both) is None
    cpu_only = tmp_path / "cpu"
    cpu_only.mkdir()
    assert missing_provider_library("cuda", cpu_only) is None


@pytest.mark.parametrize(
    ("home", "frozen", "expected"),
    [
        (Path("/usr/lib/voxtray"), True, "sudo apt-get install voxtray-cuda"),
        (Path.home() / ".local/lib/voxtray", True, "voxtray-cuda-VERSION-x86_64.tar.zst"),
        (Path("/usr/local/lib/voxtray"), True, "install.sh"),
        (Path("/opt/elsewhere"), True, "use the full bundle"),
        (Path("/usr/bin"), False, "pip install --force-reinstall onnxruntime-gpu"),
    ],
)
def test_the_fix_follows_how_voxtray_was_installed(home: Path, frozen: bool, expected: str) -> None:
    assert expected in fixes.provider_library_fix(home, frozen)


def test_the_session_log_of_a_missing_provider_names_the_add_on() -> None:
    line = (
        "[E:onnxruntime:Default, provider_bridge_ort.cc:2251 TryGetProviderInfo_CUDA] "
        "Failed to load library libonnxruntime_providers_cuda.so with error: "
        "libonnxruntime_providers_cuda.so: cannot open shared object file: "
        "No such file or directory"
    )
    [finding] = parse_provider_log([line], [CUDA, CPU], [CUDA, CPU], cuda_major=13)
    assert "provider is not installed" in finding.cause
    assert "libonnxruntime_providers_cuda.so" in finding.cause
    assert finding.fix == fixes.provider_library_fix()
