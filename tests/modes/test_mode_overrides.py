"""What a mode's own lists and keys change: replacements applied before the user's, the
words recognition favours in that app (the real model, on a real clip), and the keys that
paste, on an output of the mode's own so the loaded one keeps its keys."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.dictation_rig import MakeRig
from tests.support.outputs import RecordingOutput
from voxtray.audio.decode import load_audio
from voxtray.choices import OutputMethod, PasteChord
from voxtray.config import Settings
from voxtray.desktop.session import DesktopSession
from voxtray.dictation.modes_in_force import ModeOutputs, text_options
from voxtray.modes import parse_modes
from voxtray.output.base import TextOutput
from voxtray.output.chooser import create_output
from voxtray.output.clipboard import ClipboardOutput
from voxtray.output.target import FocusTarget, TargetKind
from voxtray.output.typeorpaste import TypeOrPaste
from voxtray.text.postprocess import TextOptions, parse_replacements, process

HESTER = SPEECH_DIR / "wav" / "ls_triton_1221-135766-0002.wav"
AUTO = str(OutputMethod.AUTO)
ENV = {"WAYLAND_DISPLAY": "wayland-1", "XDG_CURRENT_DESKTOP": "sway", "PATH": "/usr/bin"}


def test_quoted_values_paste_keys_replacements_and_vocabulary_read() -> None:
    modes = parse_modes(
        'notes: app=obsidian paste=ctrl+shift+v replace="vox tray -> Voxtray; todo -> TODO:"'
        " vocabulary=Zettelkasten,Obsidian\n"
        "a: app=x paste=ctrl+alt+v\n"
        'b: app=x replace="no arrow"\n'
        'c: app=x title="unclosed\n'
        "d: app=x vocabulary=,,\n"
    )
    [notes] = modes.modes
    assert notes.paste is PasteChord.CTRL_SHIFT_V
    assert notes.replacements == parse_replacements("vox tray -> Voxtray\ntodo -> TODO:")
    assert notes.vocabulary == ("Zettelkasten", "Obsidian")
    assert notes.summary() == (
        "notes (paste keys ctrl+shift+v, replacements vox tray -> Voxtray; todo -> TODO:, "
        "vocabulary Zettelkasten, Obsidian)"
    )
    assert len(modes.problems) == 4
    assert "paste takes ctrl+v, ctrl+shift+v, shift+insert, not 'ctrl+alt+v'" in modes.problems[0]
    assert "replace takes spoken -> written pairs" in modes.problems[1]
    assert "its quotes do not close" in modes.problems[2]
    assert "vocabulary takes words and names" in modes.problems[3]


@pytest.mark.parametrize("user_list_on", [True, False])
def test_a_modes_replacements_come_first_and_the_users_still_apply(user_list_on: bool) -> None:
    [mode] = parse_modes('notes: app=obsidian replace="to do -> TODO:"').modes
    own = TextOptions(
        use_replacements=user_list_on, replacements=parse_replacements("to do -> todo\nvox -> Vox")
    )
    options = text_options(mode, own)
    typed = process("To do call vox.", options).text
    assert typed == ("TODO: call Vox." if user_list_on else "TODO: call vox.")


def _target(app: str) -> FocusTarget:
    session = DesktopSession.from_env({}, "linux")
    return FocusTarget(TargetKind.UNKNOWN, 0, app, session, app_names=(app,))


class InApp(RecordingOutput):
    """The recording output, in a window of the app named by ``app`` (what X11's WM_CLASS
    or sway's app_id would say; the desktop tests read those for real)."""

    def __init__(self) -> None:
        super().__init__()
        self.app = ""

    def capture_target(self) -> FocusTarget:
        return _target(self.app)


def test_a_modes_vocabulary_is_favoured_in_its_app_only(dictation_rig: MakeRig) -> None:
    output = InApp()
    modes = 'reading: app=novel-reader vocabulary="Hester Prynne, Claflin"\n'
    rig = dictation_rig(output=output, settings=Settings(modes=modes, vocabulary="Voxtray"))
    heard: dict[str, list[str]] = {}
    for app in ("novel-reader", "mail", "novel-reader"):
        output.app = app
        heard.setdefault(app, []).append(rig.say(read_wav(HESTER)).text)
    print(heard)
    assert all("Hester Prynne" in text for text in heard["novel-reader"])
    assert "Prynne" not in heard["mail"][0]  # tiny.en alone hears another name


class Made:
    """``create_output`` as the dictation's factory, counting what it made."""

    def __init__(self) -> None:
        self.made: list[TextOutput] = []

    def __call__(self, name: str) -> TextOutput:
        if name == AUTO:  # auto on sway: wtype, with the clipboard for long text
            output: TextOutput = TypeOrPaste(
                create_output("wtype", ENV, platform="linux"), ClipboardOutput(ENV, "linux")
            )
        else:
            output = create_output(name, ENV, platform="linux")
        self.made.append(output)
        return output


def _pasting_part(output: TextOutput) -> ClipboardOutput:
    part = output.paster if isinstance(output, TypeOrPaste) else output
    assert isinstance(part, ClipboardOutput)
    return part


def test_a_modes_paste_keys_get_an_output_of_their_own() -> None:
    made, warnings = Made(), []
    outputs = ModeOutputs(made, warnings.append)
    loaded_output = made("auto")
    term, clip, typed = parse_modes(
        "term: app=foot paste=ctrl+shift+v\n"
        "clip: app=kitty output=clipboard paste=shift+insert\n"
        "typed: app=xterm output=xdotool paste=ctrl+shift+v\n"
    ).modes
    chosen = outputs.for_mode(term, loaded_output, AUTO, None)
    assert chosen is not loaded_output
    assert _pasting_part(chosen).paste_chord is PasteChord.CTRL_SHIFT_V
    assert _pasting_part(loaded_output).paste_chord is None  # the loaded output: ctrl+v
    assert outputs.for_mode(term, loaded_output, AUTO, None) is chosen
    assert _pasting_part(outputs.for_mode(clip, loaded_output, AUTO, None)).paste_chord is (
        PasteChord.SHIFT_INSERT
    )
    assert warnings == []
    outputs.for_mode(typed, loaded_output, AUTO, None)
    assert warnings == ["a mode's paste keys ctrl+shift+v do nothing with output xdotool: it types"]
    assert len(made.made) == 4


@pytest.mark.parametrize(
    ("chord", "wtype", "xdotool"),
    [
        (PasteChord.CTRL_V, ["-M", "ctrl", "-k", "v", "-m", "ctrl"], "ctrl+v"),
        (
            PasteChord.CTRL_SHIFT_V,
            ["-M", "ctrl", "-M", "shift", "-k", "v", "-m", "shift", "-m", "ctrl"],
            "ctrl+shift+v",
        ),
        (PasteChord.SHIFT_INSERT, ["-M", "shift", "-k", "Insert", "-m", "shift"], "shift+Insert"),
    ],
)
def test_each_key_backend_names_each_chord(
    chord: PasteChord, wtype: list[str], xdotool: str
) -> None:
    from voxtray.output.base import CHORD_NAMES
    from voxtray.output.wtype import CHORD_KEYS, wtype_args
    from voxtray.output.ydotool import YdotoolOutput

    assert wtype_args(CHORD_KEYS[chord]) == wtype
    assert CHORD_NAMES[chord] == xdotool
    ydotool = YdotoolOutput(ENV, "linux")
    ydotool.daemon_version = lambda: True  # type: ignore[method-assign]
    args = ydotool.paste_args(chord)
    presses = [a for a in args[2:] if a.endswith(":1")]
    releases = [a for a in args[2:] if a.endswith(":0")]
    assert [p[:-2] for p in presses] == [r[:-2] for r in reversed(releases)]
    assert len(presses) == chord.count("+") + 1


GERMAN = "Guten Morgen. Heute ist das Wetter schön, und wir gehen am Nachmittag in den Park."


def test_a_modes_language_is_recognised_in_its_app_only(
    dictation_rig: MakeRig, whisper_base: object, tmp_path: Path
) -> None:
    """whisper-base set to English, and a mode for one app that says German: German speech
    (espeak-ng) dictated into that app is transcribed as German, into another as English
    (Whisper forced to English translates it: the German words are gone)."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (packaging/dev.sh installs it)")
    wav = tmp_path / "de.wav"
    subprocess.run(["espeak-ng", "-v", "de", "-w", str(wav), GERMAN], check=True)
    output = InApp()
    settings = Settings(model="whisper-base", language="en", modes="brief: app=briefe language=de")
    rig = dictation_rig(output=output, settings=settings)
    heard = {}
    for app in ("briefe", "mail"):
        output.app = app
        utterance = rig.say(load_audio(wav))
        heard[app] = (utterance.record.language, utterance.text)
    print(heard)
    assert heard["briefe"][0] == "de"
    assert "Morgen" in heard["briefe"][1]
    assert heard["mail"][0] == "en"
    assert "Morgen" not in heard["mail"][1]
