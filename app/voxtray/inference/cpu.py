"""Facts about the processor that decide how inference runs on it: its name, and whether
onnxruntime's int8 matrix products are exact here.

On x86-64, onnxruntime multiplies int8 weights by uint8 activations. With VNNI
(AVX512-VNNI or AVX-VNNI) each product is summed in 32 bits. Without it (AVX2, AVX-512
without VNNI: most AMD Zen 2 and Zen 3 and Intel before Ice Lake) pairs of products are
summed in 16 bits with saturation (`vpmaddubsw`), so weights that use the full int8 range
can overflow and recognition loses or invents words. Weights kept within 7 bits (the
quantiser's "reduced range") can never overflow, so they give the same results on every
x86-64 CPU.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

_X86 = {"x86_64", "amd64", "i386", "i686", "x86"}


class Int8Path(StrEnum):
    """How int8 matrix products are summed on a CPU."""

    VNNI = "vnni"  # 32-bit sums: exact for any int8 weights
    SATURATING = "saturating"  # x86 without VNNI: 16-bit pair sums that can overflow
    EXACT = "exact"  # not x86 (ARM's dot products sum in 32 bits)
    UNKNOWN = "unknown"  # x86 whose features could not be read


@dataclass(frozen=True)
class CpuInt8:
    """What a CPU's int8 kernels can be trusted with."""

    path: Int8Path
    features: tuple[str, ...] = ()  # the VNNI flags found, for reports

    @property
    def full_range_exact(self) -> bool:
        """int8 weights that use the whole range give exact products here."""
        return self.path in (Int8Path.VNNI, Int8Path.EXACT)

    def describe(self) -> str:
        if self.path == Int8Path.VNNI:
            return f"int8 with VNNI ({', '.join(self.features)})"
        if self.path == Int8Path.SATURATING:
            return "int8 without VNNI: only reduced-range int8 weights are exact"
        if self.path == Int8Path.EXACT:
            return "int8 with 32-bit dot products"
        return "int8 support unknown: only reduced-range int8 weights are trusted"


_VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "avx512vnni", "avxvnni", "amx_int8")


def int8_path(flags: Iterable[str], machine: str) -> CpuInt8:
    """How this CPU sums int8 products, from its feature flags (as /proc/cpuinfo or
    macOS's sysctl name them, any case) and its machine name (`platform.machine()`)."""
    if machine.lower() not in _X86:
        return CpuInt8(Int8Path.EXACT)
    found = {flag.lower() for flag in flags}
    if not found:
        return CpuInt8(Int8Path.UNKNOWN)
    vnni = tuple(flag for flag in _VNNI_FLAGS if flag in found)
    return CpuInt8(Int8Path.VNNI, vnni) if vnni else CpuInt8(Int8Path.SATURATING)


@functools.cache
def host_int8() -> CpuInt8:
    """`int8_path` for the CPU this process runs on."""
    return int8_path(cpu_flags(), platform.machine())


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as the operating system reports them; empty where it
    cannot be read (then nothing is assumed)."""
    if sys.platform.startswith("linux"):
        for line in _cpuinfo_lines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
        return frozenset()
    if sys.platform == "darwin":
        return _sysctl_flags()
    return frozenset()


def cpu_model() -> str:
    """The processor's model name, as /proc/cpuinfo gives it; what `platform` says elsewhere."""
    for line in _cpuinfo_lines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _cpuinfo_lines() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def _sysctl_flags() -> frozenset[str]:
    try:
        result = subprocess.run(
            ["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(result.stdout.replace(".", "_").split())
