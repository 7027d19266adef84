"""`voxtray devices`: the microphones Voxtray can open and the GPUs it can use.

Microphones come from sounddevice (PortAudio), with the sampling rates each one accepts
for mono capture; GPUs from NVML. Neither ever raises: a missing PortAudio library or
NVIDIA driver is reported as the reason the list is empty.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from voxtray.errors import ExitCode

if TYPE_CHECKING:
    from voxtray.audio.backend import AudioBackend
    from voxtray.cli.args import Subcommands

PROBE_RATES = (8000, 16000, 22050, 32000, 44100, 48000)


@dataclass(frozen=True)
class MicrophoneInfo:
    index: int
    name: str
    host_api: str
    channels: int
    default: bool
    default_rate: int
    rates: list[int]


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    total_mb: float
    used_mb: float | None
    compute_capability: str


@dataclass
class Inventory:
    microphones: list[MicrophoneInfo] = field(default_factory=list)
    microphones_unavailable: str | None = None
    gpus: list[Gpu] = field(default_factory=list)
    gpus_unavailable: str | None = None
    driver: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def list_microphones(
    sd: AudioBackend | None = None,
) -> tuple[list[MicrophoneInfo], str | None]:
    """Input devices with their mono sampling rates; the reason when none can be listed."""
    from voxtray.audio.inputs import (
        MicrophoneError,
        accepts_rate,
        import_sounddevice,
        list_input_devices,
    )

    try:
        sd = sd if sd is not None else import_sounddevice()
        inputs = list_input_devices(sd)
    except MicrophoneError as exc:
        return [], str(exc)
    found = [
        MicrophoneInfo(
            index=device.index,
            name=device.name,
            host_api=device.hostapi,
            channels=device.max_input_channels,
            default=device.is_default,
            default_rate=int(device.default_samplerate),
            rates=[rate for rate in PROBE_RATES if accepts_rate(sd, device.index, rate)],
        )
        for device in inputs
    ]
    return found, None if found else "no input device found"


def list_gpus() -> tuple[list[Gpu], str | None]:
    """NVIDIA GPUs NVML sees; the reason when there are none."""
    from voxtray.gpu import nvml

    found = []
    for card in nvml.gpus():
        memory = nvml.gpu_memory(card.index)
        used = round(memory.used_mb) if memory is not None else None
        found.append(
            Gpu(card.index, card.name, card.memory_total_mb, used, card.compute_capability)
        )
    if found:
        return found, None
    return [], nvml.unavailable_reason() or "no NVIDIA GPU found"


def driver_version() -> str | None:
    from voxtray.gpu import nvml

    found = nvml.driver()
    return found if isinstance(found, str) else f"{found.version} (CUDA {found.cuda_version})"


def inventory() -> Inventory:
    microphones, mic_reason = list_microphones()
    gpus, gpu_reason = list_gpus()
    return Inventory(microphones, mic_reason, gpus, gpu_reason, driver_version() if gpus else None)


def format_inventory(found: Inventory) -> str:
    lines = ["Microphones:"]
    for mic in found.microphones:
        mark = "*" if mic.default else " "
        rates = ", ".join(
            f"{rate // 1000 if rate % 1000 == 0 else rate / 1000}k" for rate in mic.rates
        )
        lines.append(f" {mark} [{mic.index}] {mic.name} ({mic.host_api}) rates: {rates or 'none'}")
    if found.microphones_unavailable:
        lines.append(f"   none: {found.microphones_unavailable}")
    lines.append("GPUs:")
    for gpu in found.gpus:
        used = "?" if gpu.used_mb is None else f"{gpu.used_mb:.0f}"
        lines.append(
            f"   [{gpu.index}] {gpu.name} (compute {gpu.compute_capability}), "
            f"{used} of {gpu.total_mb:.0f} MiB used"
        )
    if found.driver:
        lines.append(f"   driver {found.driver}")
    if found.gpus_unavailable:
        lines.append(f"   none: {found.gpus_unavailable}")
    return "\n".join(lines)


def register(commands: Subcommands) -> None:
    """Register `voxtray devices [--json]` on the command line's subparsers."""
    devices = commands.add_parser("devices", help="microphones and GPUs Voxtray can use")
    devices.add_argument("--json", action="store_true", help="print JSON")
    devices.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    found = inventory()
    if args.json:
        sys.stdout.write(json.dumps(found.to_json(), ensure_ascii=False) + "\n")
    else:
        print(format_inventory(found))
    return int(ExitCode.OK)
