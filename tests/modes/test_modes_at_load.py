"""A modes setting with a line that cannot be read, loaded as the tray loads it: one line says
which line was left out and why, the load succeeds, and the other modes are in force."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.support.outputs import RecordingOutput
from tests.support.sounddevice import FakeSoundDevice
from voxtray.choices import DictationState
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.session import Dictation
from voxtray.history.store import History
from voxtray.models.store import ModelStore
from voxtray.modes import AppIdentity


def test_a_bad_line_is_one_warning_and_the_rest_work(rig: Path, model_store: ModelStore) -> None:
    warnings: list[str] = []
    dictation = Dictation(
        model_store,
        History(rig / "history.sqlite3"),
        Callbacks(warning=warnings.append),
        sd_module=FakeSoundDevice(np.zeros(16000, np.float32)),
        output_factory=lambda name: RecordingOutput(),
    )
    try:
        dictation.load(Settings(modes="shell: app=xterm output=type\nbroken\n"))
        assert dictation.state is DictationState.READY
        assert warnings == [
            "mode line 2 left out: it must start with a name (letters, digits, - or _) and a colon"
        ]
        loaded = dictation._loaded
        assert loaded is not None
        mode = loaded.modes.for_app(AppIdentity(("xterm",)))
        assert mode is not None
        assert mode.name == "shell"
    finally:
        dictation.close()
