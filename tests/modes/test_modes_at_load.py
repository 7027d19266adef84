"""A modes setting with a line that cannot be read, loaded as the tray loads it: one line says
which line was left out and why, the load succeeds, and the other modes are in force."""

from __future__ import annotations

from tests.support.dictation_rig import MakeRig
from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.modes import AppIdentity


def test_a_bad_line_is_one_warning_and_the_rest_work(dictation_rig: MakeRig) -> None:
    rig = dictation_rig(settings=Settings(modes="shell: app=xterm output=type\nbroken\n"))
    dictation = rig.dictation
    assert dictation.state is DictationState.READY
    assert rig.warnings == [
        "mode line 2 left out: it must start with a name (letters, digits, - or _) and a colon"
    ]
    loaded = dictation._loaded
    assert loaded is not None
    mode = loaded.modes.for_app(AppIdentity(("xterm",)))
    assert mode is not None
    assert mode.name == "shell"
