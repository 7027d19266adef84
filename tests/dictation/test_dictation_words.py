"""The words settings inside a dictation: processed text stored and typed, "scratch that"
and "press enter" executed through the output, sound cues on start and stop."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.dictation_rig import MakeRig, build_dictation
from tests.support.outputs import RecordingOutput
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.sounddevice import FakeSoundDevice
from voxtray.audio.cues import CUE_RATE, Cue, tone
from voxtray.config import Settings
from voxtray.desktop.session import DesktopSession
from voxtray.dictation.modes_in_force import InForce
from voxtray.dictation.session import Dictation
from voxtray.dictation.take import Take
from voxtray.inference.pipeline import UtteranceRecord
from voxtray.models.store import ModelStore
from voxtray.output.base import Delivery
from voxtray.output.target import FocusTarget, TargetKind
from voxtray.text.postprocess import TextOptions, process


class KeyOutput(RecordingOutput):
    """Records typed text and key presses in one list, in order."""

    def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
        delivery = super().deliver(text, target)
        self.events.append(text)
        return delivery

    def press_key(self, name: str, count: int) -> None:
        self.events.append(f"<{name} x{count}>")

    @property
    def events(self) -> list[str]:
        if not hasattr(self, "_events"):
            self._events: list[str] = []
        return self._events


@dataclass
class Speaker:
    """A dictation whose recognised text is handed straight to finishing."""

    dictation: Dictation
    options: TextOptions
    target: FocusTarget | None = None
    """The window focused at each press."""

    def close(self) -> None:
        self.dictation.close()


def _speaker(tmp_path: Path, model_store: ModelStore, **settings: Any) -> tuple[Speaker, list[str]]:
    rig = build_dictation(model_store, tmp_path / "history.sqlite3")
    return Speaker(rig.dictation, TextOptions.of(Settings(**settings))), rig.warnings


def _say(speaker: Speaker, output: Any, text: str) -> str:
    record = UtteranceRecord(text=text, audio_s=1.0)
    take = Take(target=speaker.target)
    dictation = speaker.dictation
    chosen = InForce(None, output, speaker.options, None)
    utterance = dictation._finisher.finish(record, chosen, take, 0.0, dictation.checks.field())
    entry = dictation.history.get(utterance.history_id)
    assert entry is not None
    assert entry.text == utterance.text  # history holds what was typed
    return utterance.text


def test_commands_run_through_the_output(tmp_path: Path, model_store: ModelStore) -> None:
    speaker, _ = _speaker(tmp_path, model_store, replacements="vox tray -> Voxtray")
    output = KeyOutput()
    try:
        assert (
            _say(speaker, output, "I like vox tray comma. It types.") == "I like Voxtray, it types."
        )
        assert _say(speaker, output, "Scratch that.") == ""
        assert _say(speaker, output, "It rained. Press enter.") == "It rained."
        assert _say(speaker, output, "Scratch that.") == ""  # Enter sent it: gone
        assert _say(speaker, output, "Dear Ann new line") == "Dear Ann\n"
        assert _say(speaker, output, "Comma.") == ","
        assert output.events == [
            "I like Voxtray, it types. ",
            "<BackSpace x26>",
            "It rained. ",
            "<Return x1>",
            "Dear Ann\n",
            ", ",  # nothing to join: the line break left no space
        ]
    finally:
        speaker.close()


def test_outputs_without_keys_type_enter_and_warn_on_scratch(
    tmp_path: Path, model_store: ModelStore
) -> None:
    speaker, warnings = _speaker(tmp_path, model_store)
    output = RecordingOutput()
    try:
        _say(speaker, output, "Hello there.")
        _say(speaker, output, "Scratch that.")
        _say(speaker, output, "Send it. Press enter.")
        assert output.typed == ["Hello there. ", "Send it. ", "\n"]
        assert warnings == ["this output cannot erase text: nothing was taken back"]
    finally:
        speaker.close()


def test_switched_off_types_the_transcript_as_is(tmp_path: Path, model_store: ModelStore) -> None:
    speaker, _ = _speaker(
        tmp_path,
        model_store,
        spoken_punctuation=False,
        spoken_commands=False,
        replacements_enabled=False,
        replacements="vox tray -> Voxtray",
    )
    output = KeyOutput()
    try:
        text = "Vox tray comma. Scratch that. Press enter."
        assert _say(speaker, output, text) == text
        assert output.events == [text + " "]
    finally:
        speaker.close()


class SpeakingDevice(FakeSoundDevice):
    """The fake microphone, plus output streams that record what they play."""

    def __init__(self, audio: np.ndarray) -> None:
        super().__init__(audio, speed=4.0)
        self.played: list[np.ndarray] = []

    def OutputStream(self, **kwargs: Any) -> Any:
        assert kwargs["samplerate"] == CUE_RATE
        device = self

        class Stream:
            def start(self) -> None: ...
            def write(self, data: np.ndarray) -> None:
                device.played.append(np.array(data[:, 0]))

            def stop(self) -> None: ...
            def close(self) -> None: ...

        return Stream()


@pytest.mark.parametrize("cues", [True, False])
def test_a_real_dictation_with_cues_and_a_replacement(dictation_rig: MakeRig, cues: bool) -> None:
    fake = SpeakingDevice(np.zeros(16000 * 30, np.float32))
    # Two phrases of the clip, so that one misheard word leaves the other to replace.
    replacements = "birch canoe -> Birch Canoe™\nsmooth planks -> Smooth Planks™"
    settings = Settings(sound_cues=cues, replacements=replacements)
    rig = dictation_rig(fake=fake, settings=settings)
    dictation, output = rig.dictation, rig.output
    utterance = rig.say()
    heard = utterance.record.text  # what was recognised, before the replacements
    assert_heard(BIRCH, heard, SENTENCE_WER)
    assert utterance.text == process(heard, TextOptions.of(settings)).text
    assert "™" in utterance.text, heard
    assert output.typed == [utterance.text + " "]
    assert dictation._cues.wait_idle()
    expected = [Cue.START, Cue.STOP] if cues else []
    assert len(fake.played) == len(expected)
    for played, cue in zip(fake.played, expected, strict=True):
        np.testing.assert_array_equal(played[: tone(cue).size], tone(cue))


def test_scratch_that_never_erases_in_another_window(
    tmp_path: Path, model_store: ModelStore
) -> None:
    speaker, _ = _speaker(tmp_path, model_store)
    output = KeyOutput()
    session = DesktopSession.from_env({}, "linux")
    editor = FocusTarget(TargetKind.X11_ACTIVE, 0x400001, 'window "editor"', session)
    chat = FocusTarget(TargetKind.X11_ACTIVE, 0x600001, 'window "chat"', session)
    try:
        speaker.target = editor
        _say(speaker, output, "Hello there.")
        speaker.target = chat
        _say(speaker, output, "Scratch that.")
        speaker.target = editor
        _say(speaker, output, "Scratch that.")
        assert output.events == ["Hello there. ", "<BackSpace x13>"]
        assert output.targets == [editor]
    finally:
        speaker.close()
