"""The audio inputs PortAudio offers: one listing for the settings window and `voxtray devices`."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from voxtray.audio.backend import AudioBackend, DeviceInfo, Restartable
from voxtray.errors import ExitCode, VoxtrayError, first_line

log = logging.getLogger(__name__)


class MicrophoneError(VoxtrayError):
    """A microphone that cannot be used: missing, busy, unsupported or no PortAudio."""

    exit_code = ExitCode.NOT_FOUND


@dataclass(frozen=True)
class InputDevice:
    """An audio input as PortAudio lists it.

    Attributes:
        index: PortAudio device index, valid until PortAudio is reinitialised.
        name: Device name; pass it (or the index) as ``Microphone(device=...)``.
        hostapi: Host API name (ALSA, WASAPI, Core Audio, ...); one physical microphone
            can appear once per host API.
        default_samplerate: The rate the device runs at natively, in Hz.
        max_input_channels: Input channels the device offers.
        is_default: Whether this is the system's default input.
    """

    index: int
    name: str
    hostapi: str
    default_samplerate: float
    max_input_channels: int
    is_default: bool


def list_input_devices(sd_module: AudioBackend | None = None) -> list[InputDevice]:
    """The devices that can record, in PortAudio's order.

    Args:
        sd_module: The ``sounddevice`` module, or a stand-in with the same API (tests).

    Raises:
        MicrophoneError: PortAudio is missing or cannot list devices.
    """
    sd = sd_module if sd_module is not None else import_sounddevice()
    try:
        devices = list(sd.query_devices())
    except Exception as exc:  # PortAudio's errors share no base class worth naming
        raise MicrophoneError(f"cannot list audio devices: {one_line(exc)}") from None
    default = _default_input_index(sd)
    return [
        InputDevice(
            index=index,
            name=str(info.get("name", f"device {index}")),
            hostapi=_hostapi_name(sd, info),
            default_samplerate=float(info.get("default_samplerate") or 0),
            max_input_channels=int(info["max_input_channels"]),
            is_default=index == default,
        )
        for index, info in enumerate(devices)
        if int(info.get("max_input_channels", 0)) > 0
    ]


def accepts_rate(sd: AudioBackend, index: int, rate: int) -> bool:
    """Whether PortAudio would open input `index` for mono float32 at `rate` Hz."""
    try:
        sd.check_input_settings(device=index, samplerate=rate, channels=1, dtype="float32")
    except Exception:  # sounddevice raises PortAudioError or ValueError, unrelated classes
        return False
    return True


def import_sounddevice() -> AudioBackend:
    """The sounddevice module; a MicrophoneError naming PortAudio when it cannot load."""
    try:
        import sounddevice  # type: ignore[import-untyped, unused-ignore]
    except OSError as exc:  # sounddevice raises OSError when the PortAudio library is missing
        raise MicrophoneError(
            f"cannot use the microphone: {one_line(exc)} (install PortAudio, e.g. libportaudio2)"
        ) from None
    except ImportError as exc:
        raise MicrophoneError(f"cannot use the microphone: {one_line(exc)}") from None
    backend: AudioBackend = sounddevice
    return backend


def reinitialise_portaudio(sd_module: AudioBackend | None = None) -> None:
    """Make PortAudio list devices again (it reads them once, when it starts), so a
    microphone plugged in or an audio server restarted since can be opened. Call it only
    while this process has no stream open."""
    sd = sd_module if sd_module is not None else import_sounddevice()
    if not isinstance(sd, Restartable):
        return
    try:
        sd._terminate()
        sd._initialize()
    except Exception as exc:  # PortAudio's own failure: the next open reports it
        log.debug("reinitialising PortAudio: %s", exc)


def one_line(exc: BaseException) -> str:
    """An exception's first line, spaces collapsed; sounddevice lists ambiguous matches
    below it, after a colon."""
    return " ".join(first_line(exc).split()).rstrip(":") or type(exc).__name__


def _default_input_index(sd: AudioBackend) -> int | None:
    # sounddevice answers the device it would open: its own default setting, else PortAudio's.
    try:
        return int(sd.query_devices(kind="input")["index"])
    except Exception:  # no default input: PortAudio answers device -1, or raises
        return None


def _hostapi_name(sd: AudioBackend, info: DeviceInfo) -> str:
    try:
        return str(sd.query_hostapis(int(info["hostapi"]))["name"])
    except Exception:  # an unknown host API leaves the name blank, not the list empty
        return ""
