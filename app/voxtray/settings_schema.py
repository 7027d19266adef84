"""One definition of each setting: its type, default, range or choices, section, label,
one-line help, what changing it restarts, and what values it refuses, in words.

`Spec.problem` is the one value check: `voxtray.config` applies it to settings.json and to
every `Settings` built (the settings window saves through one), `voxtray.cli.args` takes
its ranges from these entries and the settings window builds its controls and help text
from them, so a range, a check or a label is written here and nowhere else.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from voxtray.choices import (
    Choice,
    Engine,
    HotkeyBackend,
    HotkeyMode,
    OutputMethod,
    Precision,
    Provider,
    RemoteProtocol,
)
from voxtray.settings_checks import (
    hotkey_problem,
    language_ok,
    microphone_ok,
    remote_url_ok,
    replacements_problem,
    shown,
    vocabulary_problem,
)
from voxtray.text import languages
from voxtray.text.vocabulary import MAX_ENTRIES

T = TypeVar("T", covariant=True)

MicrophoneId = int | str | None
"""A sounddevice input: None for the system default, a device index or a device name."""


class Key(enum.StrEnum):
    """Every setting, by the name it has in settings.json and on `Settings`."""

    MODEL = "model"
    ENGINE = "engine"
    PROVIDER = "provider"
    GPU_INDEX = "gpu_index"
    PRECISION = "precision"
    MICROPHONE = "microphone"
    HOTKEY = "hotkey"
    HOTKEY_MODE = "hotkey_mode"
    HOTKEY_BACKEND = "hotkey_backend"
    OUTPUT = "output"
    VAD_THRESHOLD = "vad_threshold"
    MIN_SILENCE_MS = "min_silence_ms"
    PREROLL_MS = "preroll_ms"
    TAIL_MS = "tail_ms"
    HUD_ENABLED = "hud_enabled"
    START_AT_LOGIN = "start_at_login"
    LANGUAGE = "language"
    THREADS = "threads"
    SPOKEN_PUNCTUATION = "spoken_punctuation"
    SPOKEN_COMMANDS = "spoken_commands"
    REPLACEMENTS_ENABLED = "replacements_enabled"
    REPLACEMENTS = "replacements"
    VOCABULARY = "vocabulary"
    SOUND_CUES = "sound_cues"
    REMOTE_URL = "remote_url"
    REMOTE_PROTOCOL = "remote_protocol"
    REMOTE_MODEL = "remote_model"
    REMOTE_TIMEOUT_S = "remote_timeout_s"
    HISTORY_AUDIO_MB = "history_audio_mb"
    HISTORY_AUDIO_DAYS = "history_audio_days"
    LIVE_TEXT = "live_text"
    TYPE_AS_YOU_GO = "type_as_you_go"
    FIRST_RUN_DONE = "first_run_done"
    RECOMMEND_BUDGET_MS = "recommend_budget_ms"


class Section(enum.StrEnum):
    """The settings window's pages, in the order its sidebar lists them."""

    GENERAL = "General"
    MICROPHONE = "Microphone"
    MODEL = "Model"
    OUTPUT = "Output"
    WORDS = "Words"
    REMOTE = "Remote"
    HISTORY = "History & privacy"
    ADVANCED = "Advanced"


class Applies(enum.Enum):
    """What a change of the setting restarts."""

    AT_ONCE = "at once"
    RELOAD = "reloads the model"  # the model, the microphone and the output are reopened
    HOTKEY = "restarts the hotkey listener"


def max_threads() -> int:
    """The most inference threads a setting may ask for on this machine."""
    return os.cpu_count() or 1


def default_threads() -> int:
    # Two threads is the default, but a single-core machine must still get valid defaults.
    return min(2, max_threads())


@dataclass(frozen=True)
class Spec(Generic[T]):
    """One setting. `kind` is the JSON type; `low`/`high` bound numbers (`high` may be a
    function of the machine); `choices` names the enum of a choice setting; `check`
    replaces the type and range test for values from an open-ended set; `refuse` says why
    a string of the right shape is still refused (a hotkey no keyboard has), and `allowed`
    what `check` or `refuse` takes, in words."""

    key: Key
    kind: type
    default: T
    section: Section
    label: str
    help: str
    applies: Applies = Applies.AT_ONCE
    choices: type[Choice] | None = None
    choice_help: Mapping[str, str] = field(default_factory=dict)
    low: float | None = None
    high: float | Callable[[], float] | None = None
    unit: str = ""
    low_means: str = ""  # for a slider: what the low end does, in words
    high_means: str = ""
    empty_ok: bool = False
    check: Callable[[object], bool] | None = None
    refuse: Callable[[str], str | None] | None = None
    allowed: str = ""
    default_factory: Callable[[], T] | None = None

    @property
    def reloads(self) -> bool:
        return self.applies is Applies.RELOAD

    def initial(self) -> T:
        return self.default_factory() if self.default_factory is not None else self.default

    def top(self) -> float | None:
        """The highest allowed number now (`high` may depend on the machine)."""
        return self.high() if callable(self.high) else self.high

    def problem(self, value: object) -> str | None:
        """Why `value` cannot be this setting, as "must be ... (got ...)"; None if it can."""
        if not self._accepts(value):
            return f"must be {self._describe()} (got {shown(value)})"
        why = self.refuse(value) if self.refuse and isinstance(value, str) else None
        return f"must be {self.allowed} ({why})" if why else None

    def _accepts(self, value: object) -> bool:
        if self.check is not None:
            return self.check(value)
        if not _has_kind(value, self.kind):
            return False
        if isinstance(value, str):
            if self.choices is not None:
                return value in self.choices.values()
            return self.empty_ok or bool(value.strip())
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _in_range(value, self.low, self.top())
        return True

    def _describe(self) -> str:
        if self.check is not None:
            return self.allowed
        if self.choices is not None:
            return "one of " + ", ".join(self.choices.values())
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "a string" if self.empty_ok else "a non-empty string"
        noun = "a number" if self.kind is float else "an integer"
        top = self.top()
        if top is None:
            return f"{noun} >= {_fmt(self.low)}"
        return f"{noun} from {_fmt(self.low)} to {_fmt(top)}"


def _fmt(number: float | None) -> str:
    return f"{number:g}"


def _has_kind(value: object, kind: type) -> bool:
    # bool is an int subclass, but `true` is no thread count and `1` is no switch.
    if kind is bool or isinstance(value, bool):
        return kind is bool and isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _in_range(value: float, low: float | None, high: float | None) -> bool:
    # Only floats can be NaN; math.isfinite would overflow on a huge JSON integer.
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if low is not None and value < low:
        return False
    return high is None or value <= high


G, M, MO, OUT, W, R, H, A = (
    Section.GENERAL, Section.MICROPHONE, Section.MODEL, Section.OUTPUT, Section.WORDS,
    Section.REMOTE, Section.HISTORY, Section.ADVANCED,
)  # fmt: skip
RELOAD, REHOOK = Applies.RELOAD, Applies.HOTKEY

MODEL: Spec[str] = Spec(
    Key.MODEL, str, "whisper-tiny.en", MO, "&Model",
    "The speech model that turns your voice into text. Bigger models are more accurate "
    "and slower.", RELOAD,
)  # fmt: skip
LANGUAGE: Spec[str] = Spec(
    Key.LANGUAGE, str, "en", MO, "&Language",
    "What multilingual models listen for; auto detects it. English-only models ignore it.",
    RELOAD, check=language_ok, allowed=languages.ALLOWED,
)  # fmt: skip
ENGINE: Spec[Engine] = Spec(
    Key.ENGINE, str, Engine.AUTO, MO, "&Engine",
    "The program that runs the model. Leave it on auto unless support asks you to change it.",
    RELOAD, choices=Engine, choice_help={
        "auto": "the best engine for the chosen model",
        "ort": "Voxtray's own Whisper code on onnxruntime (the fastest on a GPU)",
        "sherpa": "sherpa-onnx (every model family)",
        "remote": "send speech to a transcription server (see Remote)",
    },
)  # fmt: skip
PROVIDER: Spec[Provider] = Spec(
    Key.PROVIDER, str, Provider.AUTO, MO, "&Processor",
    "Where the model runs: on this computer's processor (CPU) or on an NVIDIA graphics "
    "card (CUDA, TensorRT). Auto uses the graphics card when one is ready.", RELOAD,
    choices=Provider, choice_help={
        "auto": "the graphics card when its driver is loaded, else the processor",
        "cpu": "the computer's processor",
        "cuda": "an NVIDIA graphics card",
        "tensorrt": "an NVIDIA graphics card through TensorRT (slow first start)",
    },
)  # fmt: skip
GPU_INDEX: Spec[int] = Spec(
    Key.GPU_INDEX, int, 0, MO, "&Graphics card number",
    "Which NVIDIA card runs the model when there are several; the first is 0.", RELOAD,
    low=0, high=255,
)  # fmt: skip
PRECISION: Spec[Precision] = Spec(
    Key.PRECISION, str, Precision.AUTO, MO, "P&recision",
    "How exactly the model's numbers are stored. int8 is smaller and quicker on a "
    "processor; fp32 is what graphics cards run best.", RELOAD, choices=Precision,
    choice_help={
        "auto": "int8 on the processor, fp32 on a graphics card",
        "int8": "smaller and quicker, very slightly less accurate",
        "fp32": "full precision",
    },
)  # fmt: skip
THREADS: Spec[int] = Spec(
    Key.THREADS, int, 2, A, "Processor &threads",
    "How many processor cores recognise speech at once. More is faster for big models "
    "and leaves less for other programs.", RELOAD, low=1, high=max_threads,
    default_factory=default_threads,
)  # fmt: skip
MICROPHONE: Spec[MicrophoneId] = Spec(
    Key.MICROPHONE, object, None, M, "&Microphone",
    "The input Voxtray listens to. The meter shows its level now: speech should reach "
    "the right half.", RELOAD, check=microphone_ok,
    allowed="null (system default), a device index >= 0 or a device name",
)  # fmt: skip
VAD_THRESHOLD: Spec[float] = Spec(
    Key.VAD_THRESHOLD, float, 0.5, M, "Speech &detection",
    "How sure Voxtray must be that a sound is speech before it transcribes it.", RELOAD,
    low=0.05, high=0.95, low_means="catches quiet speech, and some noise",
    high_means="ignores noise, may miss soft words",
)  # fmt: skip
MIN_SILENCE_MS: Spec[int] = Spec(
    Key.MIN_SILENCE_MS, int, 400, A, "Pause that ends a &phrase",
    "How long a silence splits speech into separate phrases.", RELOAD,
    low=100, high=3000, unit="ms",
)  # fmt: skip
PREROLL_MS: Spec[int] = Spec(
    Key.PREROLL_MS, int, 400, A, "Audio kept from &before the key",
    "Sound from just before the hotkey went down, so a first word said at once is kept.",
    RELOAD, low=300, high=2000, unit="ms",
)  # fmt: skip
TAIL_MS: Spec[int] = Spec(
    Key.TAIL_MS, int, 400, A, "Audio kept &after the key",
    "How long Voxtray keeps listening after the hotkey is released, for the last word.",
    RELOAD, low=300, high=3000, unit="ms",
)  # fmt: skip
HOTKEY: Spec[str] = Spec(
    Key.HOTKEY, str, "ctrl+alt+space", G, "&Hotkey",
    "The keys that start dictation. Press Capture, then the keys; Esc cancels.", REHOOK,
    refuse=hotkey_problem, allowed="keys joined by +, such as ctrl+alt+space",
)  # fmt: skip
HOTKEY_MODE: Spec[HotkeyMode] = Spec(
    Key.HOTKEY_MODE, str, HotkeyMode.HOLD_OR_TAP, G, "Hotkey &mode",
    "Hold the keys while you speak, or tap them to start and tap again to stop.", REHOOK,
    choices=HotkeyMode, choice_help={
        "hold_or_tap": "Hold to talk, tap to toggle",
        "hold": "Hold to talk",
        "toggle": "Tap to toggle",
    },
)  # fmt: skip
HOTKEY_BACKEND: Spec[HotkeyBackend] = Spec(
    Key.HOTKEY_BACKEND, str, HotkeyBackend.AUTO, A, "Hotkey &listener",
    "What watches the keyboard for the hotkey. None: bind `voxtray toggle` to a key in "
    "your desktop's settings instead.", REHOOK, choices=HotkeyBackend, choice_help={
        "auto": "the best one for this desktop",
        "pynput": "X11 key grabs",
        "keyboard": "the keyboard package (needs root on Linux)",
        "evdev": "reads /dev/input (members of the input group; any Wayland desktop)",
        "portal": "a desktop shortcut bound through the GlobalShortcuts portal (KDE, GNOME 48)",
        "none": "no global hotkey",
    },
)  # fmt: skip
OUTPUT: Spec[OutputMethod] = Spec(
    Key.OUTPUT, str, OutputMethod.AUTO, OUT, "&Typing method",
    "How the text reaches the window you are typing in. Auto picks what this desktop "
    "supports.", RELOAD, choices=OutputMethod, choice_help={
        "auto": "the best method for this desktop",
        "xdotool": "types on X11 with xdotool",
        "pynput": "types on X11 with pynput",
        "keyboard": "types with the keyboard package (needs root on Linux)",
        "wtype": "types on Wayland (wlroots desktops)",
        "ydotool": "pastes through the ydotool daemon (any Wayland desktop)",
        "clipboard": "only copies; you paste with Ctrl+V",
        "atspi": "inserts through the accessibility bus, no keys (GNOME and KDE on Wayland)",
        "portal": "types with the keyboard the desktop lends once you allow it (GNOME, KDE)",
    },
)  # fmt: skip
TYPE_AS_YOU_GO: Spec[bool] = Spec(
    Key.TYPE_AS_YOU_GO, bool, False, OUT, "T&ype as you go (tap-to-toggle mode)",
    "Types words while you are still speaking, once they will not change.",
)  # fmt: skip
HUD_ENABLED: Spec[bool] = Spec(
    Key.HUD_ENABLED, bool, True, G, "Show the HU&D",
    "A small panel in the screen's corner: what Voxtray is doing and how fast it was.",
)  # fmt: skip
LIVE_TEXT: Spec[bool] = Spec(
    Key.LIVE_TEXT, bool, True, G, "Show the te&xt while speaking",
    "The HUD shows the words so far while you speak (local models).",
)  # fmt: skip
SOUND_CUES: Spec[bool] = Spec(
    Key.SOUND_CUES, bool, True, G, "Sound &cues",
    "A short tone when listening starts and stops, and on an error.",
)  # fmt: skip
START_AT_LOGIN: Spec[bool] = Spec(
    Key.START_AT_LOGIN, bool, False, G, "Start Voxtray at &login",
    "Voxtray starts in the tray when you log in.",
)  # fmt: skip
SPOKEN_PUNCTUATION: Spec[bool] = Spec(
    Key.SPOKEN_PUNCTUATION, bool, True, W, "Spoken &punctuation",
    'Say "comma", "full stop", "question mark" or "new line" to write them.',
)  # fmt: skip
SPOKEN_COMMANDS: Spec[bool] = Spec(
    Key.SPOKEN_COMMANDS, bool, True, W, "Spoken &commands",
    'Say "scratch that" to delete what was just typed, "press enter" to press Enter.',
)  # fmt: skip
REPLACEMENTS_ENABLED: Spec[bool] = Spec(
    Key.REPLACEMENTS_ENABLED, bool, True, W, "Apply &replacements",
    "Turn the phrases below into what you want written.",
)  # fmt: skip
REPLACEMENTS: Spec[str] = Spec(
    Key.REPLACEMENTS, str, "", W, "Replacements",
    "What you say, and what is written instead.", empty_ok=True,
    refuse=replacements_problem, allowed="lines of 'spoken -> written', both filled in",
)  # fmt: skip
VOCABULARY: Spec[str] = Spec(
    Key.VOCABULARY, str, "", W, "&Vocabulary",
    "Names and words the model should expect, one an entry (at most 5,000); common "
    "words are left to the model, which knows them.", RELOAD,
    empty_ok=True, refuse=vocabulary_problem,
    allowed=f"at most {MAX_ENTRIES} words and names",
)  # fmt: skip
REMOTE_URL: Spec[str] = Spec(
    Key.REMOTE_URL, str, "", R, "Server &address",
    "The transcription server used when Engine is remote, e.g. http://gpu-box:8000 or "
    "tcp://gpu-box:10300.", RELOAD, check=remote_url_ok,
    allowed="empty or a server URL: http(s)://HOST[:PORT] or tcp://HOST:PORT",
)  # fmt: skip
REMOTE_PROTOCOL: Spec[RemoteProtocol] = Spec(
    Key.REMOTE_PROTOCOL, str, RemoteProtocol.OPENAI, R, "&Protocol",
    "How Voxtray talks to the server; follows the address (http: openai, tcp: wyoming).",
    RELOAD, choices=RemoteProtocol, choice_help={
        "openai": "OpenAI's transcription API (voxtray serve and most servers)",
        "wyoming": "Home Assistant's Wyoming protocol",
    },
)  # fmt: skip
REMOTE_MODEL: Spec[str] = Spec(
    Key.REMOTE_MODEL, str, "", R, "Server &model",
    "The model to ask the server for; empty uses the server's own.", RELOAD, empty_ok=True,
)  # fmt: skip
REMOTE_TIMEOUT_S: Spec[float] = Spec(
    Key.REMOTE_TIMEOUT_S, float, 10.0, R, "&Wait for the server",
    "After this long without an answer, the model on this computer does the work.", RELOAD,
    low=1, high=600, unit="s",
)  # fmt: skip
HISTORY_AUDIO_MB: Spec[int] = Spec(
    Key.HISTORY_AUDIO_MB, int, 200, H, "Keep recordings up to",
    "Recordings of recent dictations, to transcribe them again; 0 keeps none.",
    low=0, high=100_000, unit="MB",
)  # fmt: skip
HISTORY_AUDIO_DAYS: Spec[int] = Spec(
    Key.HISTORY_AUDIO_DAYS, int, 30, H, "Keep recordings for",
    "Older recordings are deleted; 0 keeps none.", low=0, high=3650, unit="days",
)  # fmt: skip

FIRST_RUN_DONE: Spec[bool] = Spec(
    Key.FIRST_RUN_DONE, bool, False, G, "Set-up &window done",
    "Unticked, the set-up window (hotkey, microphone, model) opens at the next start.",
)  # fmt: skip

RECOMMEND_BUDGET_MS: Spec[int] = Spec(
    Key.RECOMMEND_BUDGET_MS, int, 300, MO, "Recommendation &budget",
    "The model manager recommends the most accurate model that gives text within this "
    "long of letting go, for 5 s of speech, measured on this machine.",
    low=50, high=10_000, unit="ms",
)  # fmt: skip

SCHEMA: Mapping[Key, Spec[object]] = {
    spec.key: spec
    for spec in (
        MODEL, ENGINE, PROVIDER, GPU_INDEX, PRECISION, MICROPHONE, HOTKEY, HOTKEY_MODE,
        HOTKEY_BACKEND, OUTPUT, VAD_THRESHOLD, MIN_SILENCE_MS, PREROLL_MS, TAIL_MS,
        HUD_ENABLED, START_AT_LOGIN, LANGUAGE, THREADS, SPOKEN_PUNCTUATION, SPOKEN_COMMANDS,
        REPLACEMENTS_ENABLED, REPLACEMENTS, VOCABULARY, SOUND_CUES, REMOTE_URL,
        REMOTE_PROTOCOL, REMOTE_MODEL, REMOTE_TIMEOUT_S, HISTORY_AUDIO_MB,
        HISTORY_AUDIO_DAYS, LIVE_TEXT, TYPE_AS_YOU_GO, FIRST_RUN_DONE, RECOMMEND_BUDGET_MS,
    )
}  # fmt: skip
"""Every setting, in `Key` order."""


def spec(key: Key) -> Spec[object]:
    return SCHEMA[key]


def in_section(section: Section) -> list[Spec[object]]:
    return [s for s in SCHEMA.values() if s.section is section]


def keys_that(applies: Applies) -> tuple[Key, ...]:
    return tuple(key for key, s in SCHEMA.items() if s.applies is applies)


def int_bounds(key: Key) -> tuple[int, int]:
    """A whole-number setting's range, for spin boxes and command-line flags."""
    s = SCHEMA[key]
    top = s.top()
    if s.kind is not int or s.low is None or top is None:
        raise ValueError(f"{key} is not a bounded whole number")
    return int(s.low), int(top)
