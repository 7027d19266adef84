"""What a load produced, held as one frozen `Loaded` value that the dictation swaps whole
under its lock: the pipeline, the microphone, the output, the settings it was loaded
with, the text handling in force and what the tray shows about the model."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from voxtray.choices import Engine, HotkeyMode
from voxtray.config import Settings
from voxtray.dictation.cleaning import cleaner_of
from voxtray.gpu.failures import GpuFailure
from voxtray.inference.live import LiveOptions
from voxtray.inference.pipeline import DictationPipeline
from voxtray.modes import Modes, parse_modes
from voxtray.settings_writer import keep_running_model
from voxtray.text.postprocess import TextOptions

if TYPE_CHECKING:
    from voxtray.audio.microphone import Microphone
    from voxtray.cleanup import Cleaner
    from voxtray.output.base import TextOutput


@dataclass(frozen=True)
class LoadedModel:
    """The loaded model as the tray, the HUD and `voxtray status` name it."""

    model: str
    engine: str
    provider: str
    precision: str
    load_s: float
    extra: dict[str, str] = field(default_factory=dict)

    def on_cpu_after(self, failure: GpuFailure) -> LoadedModel:
        """The same model once the GPU failed and the CPU runs the rest of the session."""
        extra = {**self.extra, "fallback": failure.line()}
        return dataclasses.replace(self, provider="cpu", extra=extra)


@dataclass(frozen=True)
class Loaded:
    """One load's equipment. Replaced, never changed: a reader that took it under the
    dictation's lock holds a consistent set for as long as it needs it."""

    settings: Settings
    """What the model was loaded with (the object `load` was given, until `retune`)."""
    pipeline: DictationPipeline
    output: TextOutput
    model: LoadedModel
    microphone: Microphone | None = None
    """None while it is lost, failed to open or is being reopened."""
    gpu_failure: GpuFailure | None = None
    as_you_go: bool = False
    """Type as you go is on for the next dictation."""
    text_options: TextOptions = field(init=False)
    """The rest, derived from `settings`, so a retune cannot leave one of them behind."""
    cleaner: Cleaner | None = field(init=False)
    """AI clean-up; None while it is off."""
    modes: Modes = field(init=False)
    """The modes the app in focus chooses from (`voxtray.modes`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text_options", TextOptions.of(self.settings))
        object.__setattr__(self, "cleaner", cleaner_of(self.settings))
        object.__setattr__(self, "modes", parse_modes(self.settings.modes))

    def with_microphone(self, microphone: Microphone | None) -> Loaded:
        return dataclasses.replace(self, microphone=microphone)

    def after_gpu_failure(self, failure: GpuFailure) -> Loaded:
        return dataclasses.replace(
            self, gpu_failure=failure, model=self.model.on_cpu_after(failure)
        )

    def retuned(self, settings: Settings) -> Loaded:
        """With the settings that need no reload taken from `settings`; the ones that do
        stay as loaded."""
        return dataclasses.replace(self, settings=keep_running_model(settings, self.settings))

    def end_listening(self, microphone: Microphone) -> None:
        """End the microphone's utterance and wait for its tail.

        The tail guards a last word still being spoken as the key comes up; once the VAD
        hears the speaker pause, waiting longer only delays the text. A tail set longer
        than the default is the user asking for the margin: it is kept whole."""
        whole = self.settings.tail_ms > Settings.tail_ms
        until = None if whole else self.pipeline.speaker_paused
        tail_ms = 0 if until is not None and until() else None
        microphone.end_and_wait(timeout=5.0, tail_ms=tail_ms, until=until)


def live_options(settings: Settings) -> tuple[LiveOptions | None, bool]:
    """Live text's options for the pipeline (None: off), and whether to type as you go.

    A remote engine shows no live text: each guess would be a request to the server."""
    live = settings.live_text and settings.engine is not Engine.REMOTE
    toggle = settings.hotkey_mode is HotkeyMode.TOGGLE
    as_you_go = live and toggle and settings.type_as_you_go
    return (LiveOptions(keep_committed=as_you_go) if live else None), as_you_go
