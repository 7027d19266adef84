"""Every setting, defined once: `Key`, whose members are the settings in the order
settings.json lists them, each with its `Spec` (type, default, range or choices, section,
label, one-line help, what changing it restarts, and what values it refuses, in words).

`Spec.problem` is the one value check: `voxtray.config` applies it to settings.json and to
every `Settings` built (the settings window saves through one), `voxtray.cli.args` takes
its ranges and words from these entries and the settings window builds its controls and
help text from them, so a range, a check or a label is written here and nowhere else.
Adding a setting is one member here and its typed field on `voxtray.config.Settings`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING

from voxtray.choices import (
    Engine,
    HotkeyBackend,
    HotkeyMode,
    OutputMethod,
    Precision,
    Provider,
    RemoteProtocol,
)
from voxtray.modes import DEFAULT_MODES
from voxtray.settings_checks import (
    CLEANUP_DEFAULT_ENDPOINT,
    cleanup_endpoint_problem,
    cleanup_prompt_problem,
    consented_hosts_problem,
    hotkey_problem,
    language_ok,
    microphone_ok,
    modes_problem,
    remote_url_ok,
    replacements_problem,
    vocabulary_problem,
)
from voxtray.settings_spec import Applies, Section, Spec, default_threads, max_threads
from voxtray.text import languages, vocabulary

__all__ = [
    "SCHEMA",
    "Applies",
    "Key",
    "MicrophoneId",
    "Section",
    "Spec",
    "default_threads",
    "in_section",
    "int_bounds",
    "keys_that",
    "max_threads",
    "spec",
]

MicrophoneId = int | str | None
"""A sounddevice input: None for the system default, a device index or a device name."""


class Key(enum.StrEnum):
    """Every setting, by the name it has in settings.json and on `Settings`, with its
    `Spec`: the one list of settings, in settings.json's order."""

    spec: Spec[object]

    if not TYPE_CHECKING:  # `Key("model")` looks a setting up by name, as on any enum

        def __new__(cls, name: str, spec: Spec[object]) -> Key:
            member = str.__new__(cls, name)
            member._value_ = name
            return member

        def __init__(self, name: str, spec: Spec[object]) -> None:
            self.spec = spec
            object.__setattr__(spec, "key", self)

    # One setting a paragraph, its arguments by keyword.
    # fmt: off
    MODEL = "model", Spec(
        default="whisper-tiny.en", section=Section.MODEL, label="&Model", applies=Applies.RELOAD,
        help="The speech model that turns your voice into text. Bigger models are more accurate "
        "and slower.",
    )
    ENGINE = "engine", Spec(
        default=Engine.AUTO, section=Section.MODEL, label="&Engine", applies=Applies.RELOAD,
        help="The program that runs the model. Leave it on auto unless support asks you to "
        "change it.",
        choice_help={
            "auto": "the best engine for the chosen model",
            "ort": "Voxtray's own Whisper code on onnxruntime (the fastest on a GPU)",
            "sherpa": "sherpa-onnx (every model family)",
            "remote": "send speech to a transcription server (see Remote)",
        },
    )
    PROVIDER = "provider", Spec(
        default=Provider.AUTO, section=Section.MODEL, label="&Processor", applies=Applies.RELOAD,
        help="Where the model runs: on this computer's processor (CPU) or on an NVIDIA graphics "
        "card (CUDA, TensorRT). Auto uses the graphics card when one is ready.",
        choice_help={
            "auto": "the graphics card when its driver is loaded, else the processor",
            "cpu": "the computer's processor",
            "cuda": "an NVIDIA graphics card",
            "tensorrt": "an NVIDIA graphics card through TensorRT (slow first start)",
        },
    )
    GPU_INDEX = "gpu_index", Spec(
        default=0, section=Section.MODEL, label="&Graphics card number", applies=Applies.RELOAD,
        low=0, high=255,
        help="Which NVIDIA card runs the model when there are several; the first is 0.",
    )
    PRECISION = "precision", Spec(
        default=Precision.AUTO, section=Section.MODEL, label="P&recision", applies=Applies.RELOAD,
        help="How exactly the model's numbers are stored. int8 is smaller and quicker on a "
        "processor; fp32 is what graphics cards run best.",
        choice_help={
            "auto": "int8 on the processor, fp32 on a graphics card",
            "int8": "smaller and quicker, very slightly less accurate",
            "fp32": "full precision",
        },
    )
    MICROPHONE = "microphone", Spec(
        default=None, kind=object, section=Section.MICROPHONE, label="&Microphone",
        applies=Applies.RELOAD, check=microphone_ok,
        allowed="null (system default), a device index >= 0 or a device name",
        help="The input Voxtray listens to. The meter shows its level now: speech should reach "
        "the right half.",
    )
    HOTKEY = "hotkey", Spec(
        default="ctrl+alt+space", section=Section.GENERAL, label="&Hotkey", applies=Applies.HOTKEY,
        refuse=hotkey_problem, allowed="keys joined by +, such as ctrl+alt+space",
        help="The keys that start dictation. Press Capture, then the keys; Esc cancels.",
    )
    HOTKEY_MODE = "hotkey_mode", Spec(
        default=HotkeyMode.HOLD_OR_TAP, section=Section.GENERAL, label="Hotkey &mode",
        applies=Applies.HOTKEY,
        help="Hold the keys while you speak, or tap them to start and tap again to stop.",
        choice_help={
            "hold_or_tap": "Hold to talk, tap to toggle",
            "hold": "Hold to talk",
            "toggle": "Tap to toggle",
        },
    )
    HOTKEY_BACKEND = "hotkey_backend", Spec(
        default=HotkeyBackend.AUTO, section=Section.ADVANCED, label="Hotkey &listener",
        applies=Applies.HOTKEY,
        help="What watches the keyboard for the hotkey. None: bind `voxtray toggle` to a key in "
        "your desktop's settings instead.",
        choice_help={
            "auto": "the best one for this desktop",
            "pynput": "X11 key grabs",
            "keyboard": "the keyboard package (needs root on Linux)",
            "evdev": "reads /dev/input (members of the input group; any Wayland desktop)",
            "portal": "a desktop shortcut bound through the GlobalShortcuts portal (KDE, GNOME 48)",
            "none": "no global hotkey",
        },
    )
    OUTPUT = "output", Spec(
        default=OutputMethod.AUTO, section=Section.OUTPUT, label="&Typing method",
        applies=Applies.RELOAD,
        help="How the text reaches the window you are typing in. Auto picks what this desktop "
        "supports.",
        choice_help={
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
    )
    VAD_THRESHOLD = "vad_threshold", Spec(
        default=0.5, section=Section.MICROPHONE, label="Speech &detection", applies=Applies.RELOAD,
        low=0.05, high=0.95, low_means="catches quiet speech, and some noise",
        high_means="ignores noise, may miss soft words",
        help="How sure Voxtray must be that a sound is speech before it transcribes it.",
    )
    MIN_SILENCE_MS = "min_silence_ms", Spec(
        default=400, section=Section.ADVANCED, label="Pause that ends a &phrase",
        applies=Applies.RELOAD, low=100, high=3000, unit="ms",
        help="How long a silence splits speech into separate phrases.",
    )
    PREROLL_MS = "preroll_ms", Spec(
        default=400, section=Section.ADVANCED, label="Audio kept from &before the key",
        applies=Applies.RELOAD, low=300, high=2000, unit="ms",
        help="Sound from just before the hotkey went down, so a first word said at once is kept.",
    )
    TAIL_MS = "tail_ms", Spec(
        default=400, section=Section.ADVANCED, label="Audio kept &after the key",
        applies=Applies.RELOAD, low=300, high=3000, unit="ms",
        help="How long Voxtray keeps listening after the hotkey is released, for the last word.",
    )
    HUD_ENABLED = "hud_enabled", Spec(
        default=True, section=Section.GENERAL, label="Show the HU&D",
        help="A small panel in the screen's corner: what Voxtray is doing and how fast it was.",
    )
    START_AT_LOGIN = "start_at_login", Spec(
        default=False, section=Section.GENERAL, label="Start Voxtray at &login",
        help="Voxtray starts in the tray when you log in.",
    )
    LANGUAGE = "language", Spec(
        default="en", section=Section.MODEL, label="&Language", applies=Applies.RELOAD,
        check=language_ok, allowed=languages.ALLOWED,
        help="What multilingual models listen for; auto detects it. English-only models ignore "
        "it.",
    )
    THREADS = "threads", Spec(
        default=2, section=Section.ADVANCED, label="Processor &threads", applies=Applies.RELOAD,
        low=1, high=max_threads, default_factory=default_threads,
        help="How many processor cores recognise speech at once. More is faster for big models "
        "and leaves less for other programs.",
    )
    SPOKEN_PUNCTUATION = "spoken_punctuation", Spec(
        default=True, section=Section.WORDS, label="Spoken &punctuation",
        help='Say "comma", "full stop", "question mark" or "new line" to write them.',
    )
    SPOKEN_COMMANDS = "spoken_commands", Spec(
        default=True, section=Section.WORDS, label="Spoken &commands",
        help='Say "scratch that" to delete what was just typed, "press enter" to press Enter.',
    )
    REPLACEMENTS_ENABLED = "replacements_enabled", Spec(
        default=True, section=Section.WORDS, label="Apply &replacements",
        help="Turn the phrases below into what you want written.",
    )
    REPLACEMENTS = "replacements", Spec(
        default="", section=Section.WORDS, label="Replacements", empty_ok=True,
        refuse=replacements_problem, allowed="lines of 'spoken -> written', both filled in",
        help="What you say, and what is written instead.",
    )
    VOCABULARY = "vocabulary", Spec(
        default="", section=Section.WORDS, label="&Vocabulary", applies=Applies.RELOAD,
        empty_ok=True, refuse=vocabulary_problem, allowed=vocabulary.ALLOWED,
        help="Names and words the model should expect, one an entry (at most 5,000); common "
        "words are left to the model, which knows them.",
    )
    SOUND_CUES = "sound_cues", Spec(
        default=True, section=Section.GENERAL, label="Sound &cues",
        help="A short tone when listening starts and stops, and on an error.",
    )
    REMOTE_URL = "remote_url", Spec(
        default="", section=Section.REMOTE, label="Server &address", applies=Applies.RELOAD,
        check=remote_url_ok,
        allowed="empty or a server URL: http(s)://HOST[:PORT] or tcp://HOST:PORT",
        help="The transcription server used when Engine is remote, e.g. http://gpu-box:8000 or "
        "tcp://gpu-box:10300.",
    )
    REMOTE_PROTOCOL = "remote_protocol", Spec(
        default=RemoteProtocol.OPENAI, section=Section.REMOTE, label="&Protocol",
        applies=Applies.RELOAD,
        help="How Voxtray talks to the server; follows the address (http: openai, tcp: wyoming).",
        choice_help={
            "openai": "OpenAI's transcription API (voxtray serve and most servers)",
            "wyoming": "Home Assistant's Wyoming protocol",
        },
    )
    REMOTE_MODEL = "remote_model", Spec(
        default="", section=Section.REMOTE, label="Server &model", applies=Applies.RELOAD,
        empty_ok=True,
        help="The model to ask the server for; empty uses the server's own.",
    )
    REMOTE_TIMEOUT_S = "remote_timeout_s", Spec(
        default=10.0, section=Section.REMOTE, label="&Wait for the server", applies=Applies.RELOAD,
        low=1, high=600, unit="s",
        help="After this long without an answer, the model on this computer does the work.",
    )
    CLEANUP_ENABLED = "cleanup_enabled", Spec(
        default=False, section=Section.CLEANUP, label="&Clean up each dictation with a chat model",
        help="After recognition the text goes to the endpoint below to fix punctuation and "
        "capitals; an answer that changes your words is refused and your text typed as said.",
    )
    CLEANUP_ENDPOINT = "cleanup_endpoint", Spec(
        default=CLEANUP_DEFAULT_ENDPOINT, section=Section.CLEANUP, label="&Endpoint",
        refuse=cleanup_endpoint_problem, allowed="an http(s):// URL",
        help="An OpenAI-compatible chat API: Ollama (the default, on this computer), "
        "llama.cpp's llama-server, LM Studio, vLLM or OpenAI.",
    )
    CLEANUP_MODEL = "cleanup_model", Spec(
        default="", section=Section.CLEANUP, label="&Model", empty_ok=True,
        help="The chat model to ask for, e.g. qwen2.5:3b; empty lets the server choose.",
    )
    CLEANUP_PROMPT = "cleanup_prompt", Spec(
        default="", section=Section.CLEANUP, label="&Instructions", empty_ok=True,
        refuse=cleanup_prompt_problem, allowed="a preset's name or your own instructions",
        help="Empty or default: punctuation and capitals; casual or formal: that style; "
        "anything else is sent as your own instructions.",
    )
    CLEANUP_BUDGET_MS = "cleanup_budget_ms", Spec(
        default=2000, section=Section.CLEANUP, label="&Wait for the answer", low=100,
        high=30_000, unit="ms",
        help="Past this, your text is typed as recognised; a late answer is kept in history.",
    )
    CLEANUP_TIMEOUT_S = "cleanup_timeout_s", Spec(
        default=30.0, section=Section.CLEANUP, label="&Keep a late answer for", low=1, high=600,
        unit="s",
        help="How long an answer may still come, for history, after the text was typed.",
    )
    CLEANUP_CONSENTED_HOSTS = "cleanup_consented_hosts", Spec(
        default="", section=Section.CLEANUP, label="&Hosts allowed", empty_ok=True,
        refuse=consented_hosts_problem, allowed="host names, one a line",
        help="Other computers your text may be sent to, by name; this computer needs none.",
    )
    MODES = "modes", Spec(
        default=DEFAULT_MODES, section=Section.MODES, label="&Modes, one a line",
        empty_ok=True, refuse=modes_problem, allowed="lines of name: app=... key=value",
        help="The app in focus picks the first mode that names it (app= its class or app_id, "
        "title= its window title; * for any characters); the mode's keys override the settings.",
    )
    HISTORY_AUDIO_MB = "history_audio_mb", Spec(
        default=200, section=Section.HISTORY, label="Keep recordings up to", low=0, high=100_000,
        unit="MB",
        help="Recordings of recent dictations, to transcribe them again; 0 keeps none.",
    )
    HISTORY_AUDIO_DAYS = "history_audio_days", Spec(
        default=30, section=Section.HISTORY, label="Keep recordings for", low=0, high=3650,
        unit="days",
        help="Older recordings are deleted; 0 keeps none.",
    )
    LIVE_TEXT = "live_text", Spec(
        default=True, section=Section.GENERAL, label="Show the te&xt while speaking",
        help="The HUD shows the words so far while you speak (local models).",
    )
    TYPE_AS_YOU_GO = "type_as_you_go", Spec(
        default=False, section=Section.OUTPUT, label="T&ype as you go (tap-to-toggle mode)",
        help="Types words while you are still speaking, once they will not change.",
    )
    FIRST_RUN_DONE = "first_run_done", Spec(
        default=False, section=Section.GENERAL, label="Set-up &window done",
        help="Unticked, the set-up window (hotkey, microphone, model) opens at the next start.",
    )
    RECOMMEND_BUDGET_MS = "recommend_budget_ms", Spec(
        default=300, section=Section.MODEL, label="Recommendation &budget", low=50, high=10_000,
        unit="ms",
        help="The model manager recommends the most accurate model that gives text within this "
        "long of letting go, for 5 s of speech, measured on this machine.",
    )
    # fmt: on


SCHEMA: Mapping[Key, Spec[object]] = {key: key.spec for key in Key}
"""Every setting's `Spec`, in `Key` order."""


def spec(key: Key) -> Spec[object]:
    return Key(key).spec


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
