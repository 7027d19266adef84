"""Text outputs for tests: `RecordingOutput` records what it was asked to type (and can fail
mid-way), `TextField` also edits its text as a window would, `speak` plays a clip through
the fake sound device, `after_first_piece` acts on the real window once the first piece
was typed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from tests.support.sounddevice import FakeSoundDevice
from voxtray.desktop.session import DesktopSession
from voxtray.output import DeliveryError, FocusTarget
from voxtray.output.delivery import Delivery


class RecordingOutput:
    """Records what it is asked to type; can fail, or stop after `stop_after` characters
    as a backend does when the target window closes mid-typing."""

    name = "recording"

    def __init__(self, fail: bool = False, stop_after: int | None = None) -> None:
        self.fail = fail
        self.stop_after = stop_after
        self.typed: list[str] = []
        self.targets: list[FocusTarget | None] = []

    def capture_target(self) -> FocusTarget:
        return FocusTarget.unknown(DesktopSession.from_env({}, "linux"))

    def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
        if self.fail:
            raise DeliveryError("the target window went away")
        self.targets.append(target)
        if self.stop_after is None:
            self.typed.append(text)
            return Delivery(text, text, "the test window", self.name)
        typed = text[: self.stop_after]
        self.typed.append(typed)
        rest = text[self.stop_after :]
        return Delivery(text, typed, "the test window", self.name, rest, "the window was closed")


class TextField(RecordingOutput):
    """A text field: typing appends at the caret, BackSpace and Return edit it (or, with
    `can_erase` off, the output has no key pressing, as a clipboard-only one)."""

    def __init__(self, can_erase: bool = True) -> None:
        super().__init__()
        self.text = ""
        self.enters = 0
        if can_erase:
            self.press_key = self._press

    def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
        self.text += text
        return super().deliver(text, target)

    def _press(self, name: str, count: int = 1) -> None:
        if name == "BackSpace":
            self.text = self.text[: max(0, len(self.text) - count)]
        elif name == "Return":
            self.text += "\n"
            self.enters += count


def speak(fake: FakeSoundDevice, audio: np.ndarray) -> int:
    """Make the fake microphone 'hear' `audio` from now on; returns where it ends."""
    stream = fake.streams[-1]
    position = stream.hold()
    fake.audio = np.concatenate([fake.audio[:position], audio, np.zeros(16000 * 30, np.float32)])
    stream.resume()
    return position + audio.size


@dataclasses.dataclass(frozen=True)
class AfterFirstPiece(FocusTarget):
    """The real target; ``action`` runs (for real) when the first piece has been typed."""

    action: Callable[[], None] = dataclasses.field(default=lambda: None, compare=False)
    checks: list[str | None] = dataclasses.field(default_factory=list, compare=False)

    def lost(self) -> str | None:
        if len(self.checks) == 1:
            self.action()
        reason = super().lost()
        self.checks.append(reason)
        return reason


def after_first_piece(target: FocusTarget, action: Callable[[], None]) -> AfterFirstPiece:
    fields = {field.name: getattr(target, field.name) for field in dataclasses.fields(target)}
    return AfterFirstPiece(**fields, action=action)
