"""Every choice a setting, a flag or a widget can name, as one `StrEnum` each.

Settings fields, argparse `choices=`, the settings window's combo boxes and the tray/HUD
tables all read these, so a new engine or output method is added here and nowhere else
as a string. Members are `str`, so they serialise to JSON and compare equal to their values.
"""

from __future__ import annotations

import enum
from typing import Self


class Choice(enum.StrEnum):
    """A `StrEnum` with helpers for flags and messages."""

    @classmethod
    def values(cls) -> list[str]:
        """The values in declaration order, for argparse `choices=` and messages."""
        return [member.value for member in cls]

    @classmethod
    def parse(cls, value: str) -> Self:
        """The member named by `value`.

        Raises:
            ValueError: naming the allowed values when `value` is not one of them.
        """
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"{value!r} is not one of {', '.join(cls.values())}") from None


class VocabularyUse(Choice):
    """How the ort Whisper engine favours the vocabulary (docs/benchmarks.md, "Vocabulary")."""

    PROMPT = "prompt"  # Whisper's initial prompt
    BIAS = "bias"  # a bonus inside greedy decoding where an entry is under way
    BOTH = "both"


class Engine(Choice):
    """Which inference code runs a model."""

    AUTO = "auto"  # ort for Whisper, sherpa for every other family
    ORT = "ort"
    SHERPA = "sherpa"
    REMOTE = "remote"  # a transcription server (voxtray serve or a peer); see RemoteProtocol


class Provider(Choice):
    """Where onnxruntime runs; AUTO means CUDA where an NVIDIA driver is loaded."""

    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"
    TENSORRT = "tensorrt"


class Precision(Choice):
    """Which variant of a model's weights; AUTO means int8 on the CPU, fp32 on a GPU."""

    AUTO = "auto"
    INT8 = "int8"
    FP32 = "fp32"


class HotkeyMode(Choice):
    """How the push-to-talk key behaves."""

    HOLD = "hold"
    TOGGLE = "toggle"
    HOLD_OR_TAP = "hold_or_tap"


class HotkeyBackend(Choice):
    """What listens for the global hotkey."""

    AUTO = "auto"
    PYNPUT = "pynput"
    KEYBOARD = "keyboard"
    EVDEV = "evdev"
    PORTAL = "portal"
    NONE = "none"


class OutputMethod(Choice):
    """How text reaches the focused window."""

    AUTO = "auto"
    XDOTOOL = "xdotool"
    PYNPUT = "pynput"
    KEYBOARD = "keyboard"
    WTYPE = "wtype"
    YDOTOOL = "ydotool"
    CLIPBOARD = "clipboard"
    ATSPI = "atspi"
    PORTAL = "portal"


class PasteChord(Choice):
    """The keys that paste: most apps take ctrl+v; terminals take ctrl+shift+v, or
    shift+insert (which pastes the primary selection in some)."""

    CTRL_V = "ctrl+v"
    CTRL_SHIFT_V = "ctrl+shift+v"
    SHIFT_INSERT = "shift+insert"


class DictationState(Choice):
    """What the app is doing, as the tray, the HUD and `voxtray status` show it."""

    LOADING = "loading"
    READY = "ready"
    LISTENING = "listening"
    TRANSCRIBING = "transcribing"
    ERROR = "error"


class TranscriptFormat(Choice):
    """The file `voxtray transcribe` writes per input."""

    TXT = "txt"
    SRT = "srt"
    VTT = "vtt"
    JSON = "json"


class RemoteProtocol(Choice):
    """How a remote engine talks to its transcription server."""

    OPENAI = "openai"  # POST /v1/audio/transcriptions (voxtray serve, faster-whisper-server, ...)
    WYOMING = "wyoming"  # Home Assistant's JSONL + PCM over TCP


class ResponseFormat(Choice):
    """What `POST /v1/audio/transcriptions` answers with."""

    JSON = "json"
    TEXT = "text"
    SRT = "srt"
    VTT = "vtt"
    VERBOSE_JSON = "verbose_json"
