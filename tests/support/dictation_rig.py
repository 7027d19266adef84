"""A `Dictation` built as most tests build it: a fake microphone playing silence until a
test speaks a clip into it, an output that records what it was asked to type, and
callbacks that keep the warnings and states. `build_dictation` makes one; the
`dictation_rig` fixture makes them in the test's folder and closes them after it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.audio import CLIP, read_wav
from tests.support.models import ensure_installed
from tests.support.outputs import RecordingOutput, speak
from tests.support.sounddevice import FakeSoundDevice
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.io import OutputFactory
from voxtray.dictation.session import Dictation
from voxtray.dictation.utterance import Utterance
from voxtray.history.store import History
from voxtray.models.store import ModelStore

if TYPE_CHECKING:
    from voxtray.dictation.journal import Journal
    from voxtray.inference.engines import RecognizerFactory
    from voxtray.inference.remote_key import ApiKeyStore

SILENCE_S = 30
"""How long the fake microphone plays silence when nothing is spoken into it."""


@dataclass
class DictationRig:
    """The dictation and the parts a test drives and reads back."""

    dictation: Dictation
    fake: FakeSoundDevice
    output: RecordingOutput
    """What the default output factory hands out (unused where a test passes its own)."""
    warnings: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    closed: bool = False

    @property
    def history(self) -> History:
        return self.dictation.history

    def speak(self, audio: NDArray[np.float32] | None = None) -> int:
        """The clip (or ``audio``) into the open microphone; where it ends."""
        return speak(self.fake, read_wav(CLIP) if audio is None else audio)

    def say(self, audio: NDArray[np.float32] | None = None) -> Utterance:
        """One whole dictation of the clip (or ``audio``): start, speak, stop."""
        assert self.dictation.start()
        self.fake.streams[-1].wait_for(self.speak(audio))
        utterance = self.dictation.stop()
        assert utterance is not None
        return utterance

    def close(self) -> None:
        """Closes the dictation once, however often it is called."""
        if not self.closed:
            self.closed = True
            self.dictation.close()


class RigOptions(TypedDict, total=False):
    """What a rig may replace (`build_dictation`'s options)."""

    fake: FakeSoundDevice  # the microphone: silence by default
    speed: float  # how many times real time the default silent microphone runs (4)
    output: RecordingOutput  # the recording output every setting gets
    output_factory: OutputFactory  # or the whole factory
    real_outputs: bool  # or the real outputs, as the settings choose them
    callbacks: Callbacks  # instead of those that fill the rig's warnings and states
    api_keys: ApiKeyStore  # these and the rest go to `Dictation` as they are
    journal: Journal
    recognizer_factory: RecognizerFactory


def build_dictation(
    store: ModelStore, history: History | Path, **options: Unpack[RigOptions]
) -> DictationRig:
    """A dictation on ``store`` keeping its history at ``history`` (a database or its path),
    with what ``options`` replace (`RigOptions`)."""
    fake = options.get("fake")
    if fake is None:
        silence = np.zeros(16000 * SILENCE_S, np.float32)
        fake = FakeSoundDevice(silence, speed=options.get("speed", 4.0))
    recording = options.get("output")
    if recording is None:
        recording = RecordingOutput()
    warnings: list[str] = []
    states: list[str] = []
    callbacks = options.get("callbacks")
    if callbacks is None:
        callbacks = Callbacks(
            state=lambda state, detail: states.append(state.value), warning=warnings.append
        )
    output_factory = options.get("output_factory")
    if output_factory is None and not options.get("real_outputs", False):

        def recording_output(name: str) -> Any:  # the recording stands in for any output
            return recording

        output_factory = recording_output
    dictation = Dictation(
        store,
        history if isinstance(history, History) else History(history),
        callbacks,
        sd_module=fake,
        output_factory=output_factory,
        api_keys=options.get("api_keys"),
        journal=options.get("journal"),
        recognizer_factory=options.get("recognizer_factory"),
    )
    return DictationRig(dictation, fake, recording, warnings, states)


class MakeRig(Protocol):
    """`build_dictation` on the test's store and folder, plus the settings to load."""

    def __call__(
        self,
        *,
        history: History | Path | None = None,
        settings: Settings | None = None,
        **options: Unpack[RigOptions],
    ) -> DictationRig: ...


@pytest.fixture
def dictation_rig(tmp_path: Path, model_store: ModelStore) -> Iterator[MakeRig]:
    """Makes `build_dictation` rigs on the shared store, its default models installed,
    each with its own history in the test's folder; loaded with ``settings`` when given.
    Every rig is closed after the test."""
    made: list[DictationRig] = []
    installed: list[bool] = []

    def make(
        *,
        history: History | Path | None = None,
        settings: Settings | None = None,
        **options: Unpack[RigOptions],
    ) -> DictationRig:
        if not installed:
            for name in model_store.catalog.defaults:
                ensure_installed(model_store, name)
            installed.append(True)
        name = "history.sqlite3" if not made else f"history-{len(made)}.sqlite3"
        rig = build_dictation(model_store, history or tmp_path / name, **options)
        made.append(rig)
        if settings is not None:
            rig.dictation.load(settings)
        return rig

    yield make
    for rig in reversed(made):
        rig.close()
