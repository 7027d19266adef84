"""Spoken commands while typing as you go: "scratch that" erases what was typed for the
retracted part through the output that typed it (or says exactly what it could not
erase), "press enter" presses Enter instead of typing "Press", and history records what
really reached the window."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.dictation_rig import MakeRig
from tests.support.outputs import TextField
from tests.support.spoken_commands import CommandClip, Effect, command_problem, load_command_clips
from voxtray.audio.decode import load_audio
from voxtray.choices import HotkeyMode
from voxtray.config import Settings
from voxtray.dictation.live_typing import LiveTypist, settled_words
from voxtray.text.postprocess import HistoryContext, TextOptions, process

pytestmark = [pytest.mark.faults, pytest.mark.hostile]

OPTIONS = TextOptions()


def _type_as_you_go(window: TextField, partials: list[str], final: str) -> tuple[LiveTypist, str]:
    """Offer `partials` as the live recogniser commits them, then deliver the rest of
    `final` as the dictation does; returns the typist and the window's text."""
    warnings: list[str] = []
    typist = LiveTypist(warnings.append)
    typist.begin(window, None, OPTIONS)
    for committed in partials:
        typist.offer(committed)
    rest = typist.finish(process(final, OPTIONS))
    if rest.backspaces and hasattr(window, "press_key"):
        window.press_key("BackSpace", rest.backspaces)
    if rest.typed:
        window.deliver(rest.typed)
    if rest.press_enter:
        window._press("Return", 1)
    return typist, window.text


RETRACTED = [
    "I hate my boss",
    "I hate my boss and I want to quit",
    "I hate my boss and I want to quit this job today.",
    "I hate my boss and I want to quit this job today. Scratch",
    "I hate my boss and I want to quit this job today. Scratch that.",
    "I hate my boss and I want to quit this job today. Scratch that. I love",
]
RETRACTED_FINAL = "I hate my boss and I want to quit this job today. Scratch that. I love my job."


def test_scratch_that_erases_what_was_typed_for_it() -> None:
    _typist, text = _type_as_you_go(TextField(), RETRACTED, RETRACTED_FINAL)
    assert text == "I love my job. "


def test_scratch_that_the_output_cannot_erase_is_named() -> None:
    window = TextField(can_erase=False)
    typist, text = _type_as_you_go(window, RETRACTED, RETRACTED_FINAL)
    assert typist.problem is not None
    assert "I hate my boss and I want to quit this job today." in typist.problem
    assert "could not be erased" in typist.problem
    assert text.startswith("I hate my boss")


def test_press_enter_mid_dictation_presses_enter_and_types_no_word() -> None:
    partials = ["Send it now", "Send it now. Press", "Send it now. Press enter."]
    window = TextField()
    _typist, text = _type_as_you_go(window, partials, "Send it now. Press enter.")
    assert "Press" not in "".join(window.typed)
    assert text == "Send it now. \n"
    assert window.enters == 1


def test_press_as_a_plain_word_is_typed_once_the_next_word_says_so() -> None:
    assert settled_words("Please press", OPTIONS) == "Please"
    assert settled_words("Please press the button", OPTIONS) == "Please press the button"
    partials = ["Please press", "Please press the button."]
    _typist, text = _type_as_you_go(TextField(), partials, "Please press the button.")
    assert text == "Please press the button. "


def test_scratch_that_first_takes_back_the_previous_dictation() -> None:
    window = TextField()
    window.text = "Old words. "
    typist = LiveTypist(lambda line: None)
    context = HistoryContext("Old words. ", retractable=True)
    typist.begin(window, None, OPTIONS, context)
    for committed in ["Scratch that.", "Scratch that. New words."]:
        typist.offer(committed)
    rest = typist.finish(process("Scratch that. New words.", OPTIONS, context))
    assert rest.typed == ""
    assert not rest.actions
    assert window.text == "New words. "


# --- the real dictation: spoken commands through the fake microphone, the real model ---

SCRATCH_CLIPS = [clip for clip in load_command_clips() if clip.effect is Effect.SCRATCH]


def _dictate_typing_as_you_go(make: MakeRig, folder: Path, clip: CommandClip) -> str:
    """One dictation of the clip with type as you go; returns what the app recognised,
    after checking that the window and history hold what processing leaves of it."""
    speech = load_audio(clip.path)
    window = TextField()
    settings = Settings(hotkey_mode=HotkeyMode.TOGGLE, type_as_you_go=True)
    rig = make(history=folder / f"{clip.id}.sqlite3", speed=1.0, output=window, settings=settings)
    dictation = rig.dictation
    try:
        assert dictation.start()
        end = rig.speak(speech)
        rig.fake.streams[-1].wait_for(end, timeout=speech.size / 16000 + 10)
        time.sleep(1.5)
        utterance = dictation.stop()
        assert utterance is not None
        heard = utterance.record.text
        left = process(heard, TextOptions.of(settings)).text
        # Whatever was typed while speaking that the command took back has been erased.
        assert window.text.strip() == left.strip(), (heard, window.text)
        entry = dictation.history.get(utterance.history_id)
        assert entry is not None
        assert entry.delivered
        assert entry.text.strip() == window.text.strip()
        return heard
    finally:
        rig.close()


@pytest.mark.slow
def test_dictation_with_scratch_that_leaves_only_the_kept_sentence(
    tmp_path: Path, dictation_rig: MakeRig
) -> None:
    """ "I hate my boss ... today." / "Scratch that." / "I love my job.", 0.8 s apart: the
    first sentence is typed while the rest is still being said, then taken back.

    What the app recognised decides what must be left. The clips are ones in which tiny.en
    hears the command in a whole file on every engine and precision (tests/data/commands),
    but typing as you go keeps words from decodes of part of the audio, which depend on
    the machine's speed: so three voices are dictated, and the command must be heard (and
    acted on) in one at least."""
    heard = [_dictate_typing_as_you_go(dictation_rig, tmp_path, clip) for clip in SCRATCH_CLIPS]
    problems = [command_problem(c, text) for c, text in zip(SCRATCH_CLIPS, heard, strict=True)]
    assert None in problems, problems
