"""TODO"""

from __future__ import annotations

import numpy as np

from tests.support.sounddevice import FakeSoundDevice
from voxtray.desktop.session import DesktopSession
from voxtray.output.base import DeliveryError
from voxtray.output.delivery import Delivery
from voxtray.output.target import FocusTarget


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


def speak(fake: FakeSoundDevice, audio: np.ndarray) -> int:
    """Make the fake microphone 'hear' `audio` from now on; returns where it ends."""
    stream = fake.streams[-1]
    position = stream.hold()
    fake.audio = np.concatenate([fake.audio[:position], audio, np.zeros(16000 * 30, np.float32)])
    stream.resume()
    return position + audio.size
