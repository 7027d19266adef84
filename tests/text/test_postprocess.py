"""Spoken punctuation, commands and replacements: worded cases, nouns that must survive, and
real tiny.en transcripts that must come back unchanged."""

from __future__ import annotations

import pytest

from tests.support.audio import Clip, read_wav
from tests.support.models import ensure_installed
from tests.support.spoken_commands import (
    Effect,
    command_problem,
    load_command_clips,
    transcribe_clip,
)
from voxtray.choices import Engine, Precision, Provider
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.pipeline import DictationPipeline
from voxtray.inference.vad import SileroVad
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.text.postprocess import (
    Action,
    ActionKind,
    HistoryContext,
    Processed,
    Replacement,
    TextOptions,
    parse_replacements,
    process,
)

VOX = (Replacement("vox tray", "Voxtray"),)
ALL_ON = TextOptions(replacements=VOX)
PREVIOUS = HistoryContext(previous="It rained all day. ", retractable=True)
ENTER = Action(ActionKind.PRESS_ENTER)


@pytest.mark.parametrize(
    "text",
    [
        "The Victorian period was long.",
        "A comma splice is an error.",
        "The trial period ends.",
        "The trial period ends next week, period dramas too.",
        "A new line of products.",
        "We came to a full stop.",
        "Is this a question mark?",
        "Put a comma.",
        "Start a new paragraph.",
        "The period, which lasted long, ended.",
        "You need to press enter.",
        "Don't scratch that.",
        "You should scratch that.",
        "Open the file and press enter.",
        "I didn’t press enter.",
        "Press enter to continue.",
        "Scratch that itch.",
        "He drew an exclamation mark on the board.",
        "Her colon surgery went well.",
        "",
        "  spaces  kept   as  they are ",
    ],
)
def test_ordinary_words_are_left_alone(text: str) -> None:
    assert process(text, ALL_ON, PREVIOUS) == Processed(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, comma, how are you? Question mark.", "Hello, how are you?"),
        ("Hello comma. How are you question mark", "Hello, how are you?"),
        ("It was fine. Period.", "It was fine."),
        ("That ends here full stop", "That ends here."),
        ("That ends here full-stop.", "That ends here."),
        ("Hello world exclamation mark", "Hello world!"),
        ("Hello world exclamation point.", "Hello world!"),
        ("Note colon. Buy milk.", "Note: buy milk."),
        ("One semicolon. Two.", "One; two."),
        ("Ask me comma. I will answer.", "Ask me, I will answer."),
        ("It is NASA comma. NASA said so.", "It is NASA, NASA said so."),
        ("The Victorian period period.", "The Victorian period."),
        ("Done period. Next one period.", "Done. Next one."),
        ("Done period. next one.", "Done. Next one."),
        ("Why, question mark. Because.", "Why? Because."),
        ("Dear John, new line. Thanks.", "Dear John,\nThanks."),
        ("Dear John newline. thanks.", "Dear John\nThanks."),
        ("It was good. New paragraph. Next topic", "It was good.\n\nNext topic"),
        ("First item new line", "First item\n"),
    ],
)
def test_spoken_punctuation(text: str, expected: str) -> None:
    assert process(text, ALL_ON).text == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Send it. Press enter.", Processed("Send it.", (ENTER,))),
        ("Send it, press enter.", Processed("Send it,", (ENTER,))),
        ("Send the report press enter.", Processed("Send the report", (ENTER,))),
        ("I want pizza scratch that. I want pasta.", Processed("I want pasta.")),
        ("Press enter.", Processed("", (ENTER,))),
        ("I want pizza. Scratch that. I want pasta.", Processed("I want pasta.")),
        ("I want pizza, scratch that.", Processed("")),
        ("Scratch that.", Processed("", (Action(ActionKind.BACKSPACE, 19),))),
        (
            "Scratch that. It snowed.",
            Processed("It snowed.", (Action(ActionKind.BACKSPACE, 19),)),
        ),
        ("Comma.", Processed(",", (Action(ActionKind.BACKSPACE, 1),))),
        ("New paragraph.", Processed("\n\n", (Action(ActionKind.BACKSPACE, 1),))),
    ],
)
def test_commands_and_joining_the_previous_utterance(text: str, expected: Processed) -> None:
    assert process(text, ALL_ON, PREVIOUS) == expected


def test_nothing_is_erased_unless_the_previous_text_can_be_taken_back() -> None:
    gone = HistoryContext(previous="It rained all day. ", retractable=False)
    assert process("Scratch that.", ALL_ON, gone) == Processed("")
    assert process("Comma.", ALL_ON, gone) == Processed(",")
    assert process("Scratch that.", ALL_ON) == Processed("")


@pytest.mark.parametrize(
    ("options", "text", "expected"),
    [
        (TextOptions(spoken_punctuation=False), "Hi comma. There.", "Hi comma. There."),
        (TextOptions(spoken_punctuation=False), "Hi. Scratch that. Yo.", "Yo."),
        (TextOptions(spoken_commands=False), "Hi. Scratch that. Yo.", "Hi. Scratch that. Yo."),
        (TextOptions(spoken_commands=False), "Hi comma. There.", "Hi, there."),
        (TextOptions(replacements=VOX, use_replacements=False), "vox tray", "vox tray"),
        (TextOptions(language="xx", replacements=VOX), "vox tray period", "Voxtray period"),
    ],
)
def test_each_part_switches_off(options: TextOptions, text: str, expected: str) -> None:
    assert process(text, options).text == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I use vox tray daily.", "I use Voxtray daily."),
        ("Vox Tray works.", "Voxtray works."),
        ("VOX-TRAY works.", "Voxtray works."),
        ("vox  tray", "Voxtray"),
        ("voxtrays and vox trayful stay", "voxtrays and vox trayful stay"),
        ("a vox tray period", "a Voxtray."),
    ],
)
def test_replacements_are_case_insensitive_whole_phrases(text: str, expected: str) -> None:
    assert process(text, ALL_ON).text == expected


def test_replacements_apply_in_order_and_parse_from_lines() -> None:
    parsed = parse_replacements("vox tray -> Voxtray\n\nno arrow\n Voxtray -> Voxtray(TM) \n->x")
    assert parsed == (Replacement("vox tray", "Voxtray"), Replacement("Voxtray", "Voxtray(TM)"))
    assert process("vox tray", TextOptions(replacements=parsed)).text == "Voxtray(TM)"


def test_replacement_text_is_literal() -> None:
    options = TextOptions(replacements=(Replacement("home", r"C:\new\1"),))
    assert process("go home", options).text == r"go C:\new\1"


@pytest.mark.parametrize(
    ("processed", "typed"),
    [
        (Processed("Hello."), "Hello. "),
        (Processed("Dear John,\n"), "Dear John,\n"),
        (Processed(""), ""),
    ],
)
def test_typed_text_separates_utterances(processed: Processed, typed: str) -> None:
    assert processed.typed == typed


def test_action_helpers() -> None:
    processed = process("Scratch that. Done. Press enter.", ALL_ON, PREVIOUS)
    assert processed.backspaces == 19
    assert processed.press_enter
    assert processed.text == "Done."


def test_real_transcripts_without_commands_come_back_unchanged(
    tiny_en: InstalledModel, eval_clips: list[Clip]
) -> None:
    choice = EngineChoice(engine=Engine.ORT, provider=Provider.CPU, precision=Precision.INT8)
    recognizer = create_recognizer(tiny_en, choice)
    short = [clip for clip in eval_clips if clip.duration_s <= 25]
    transcripts = [recognizer.transcribe(read_wav(clip.path)).text for clip in short]
    assert sum(bool(text) for text in transcripts) >= len(short) - 1
    assert any(c in text for text in transcripts for c in ",.?")  # Whisper punctuated
    for text in transcripts:
        assert process(text, ALL_ON, PREVIOUS) == Processed(text)


def test_dictated_commands_through_real_recognition(
    tiny_en: InstalledModel, model_store: ModelStore
) -> None:
    """Synthetic speech through voice detection and tiny.en, then processing: what Whisper
    really writes for spoken marks and commands. Each command is said in several voices and
    rates (tests/data/commands), each clip checked to be heard right by every engine and
    precision of tiny.en, with and without VNNI, so every one must act here."""
    vad = ensure_installed(model_store, "silero-vad-v6").variant_files("fp32")["model"]
    choice = EngineChoice(engine=Engine.ORT, provider=Provider.CPU, precision=Precision.INT8)
    pipeline = DictationPipeline(SileroVad(vad), create_recognizer(tiny_en, choice))
    clips = load_command_clips()
    assert {clip.effect for clip in clips} == set(Effect)
    heard = {clip.id: transcribe_clip(pipeline, clip.path) for clip in clips}
    problems = [command_problem(clip, heard[clip.id]) for clip in clips]
    assert [problem for problem in problems if problem] == []


def test_a_command_not_heard_is_named() -> None:
    [scratch, *_] = [c for c in load_command_clips() if c.effect is Effect.SCRATCH]
    assert command_problem(scratch, "I hate my boss. Scratch that. I love my job.") is None
    # What tiny.en made of one espeak-ng voice on a CPU without VNNI:
    problem = command_problem(scratch, "I hate my boss. Scratch! I love my job.")
    assert problem is not None
    assert "kept words wrong" in problem
    [enter, *_] = [c for c in load_command_clips() if c.effect is Effect.ENTER]
    problem = command_problem(enter, "Send the report. Present.")
    assert problem is not None
    assert "Enter not pressed" in problem
    [noun, *_] = [c for c in load_command_clips() if c.effect is Effect.WORD]
    assert command_problem(noun, "The Victorian period was long.") is None
    problem = command_problem(noun, "The Victorian period. Was long.")
    assert problem is not None
    assert "'period' left 0 times" in problem
