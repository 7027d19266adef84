"""Dictating the same real clip into several real windows in turn, each focused as a user
would, for the modes tests on X and on sway: what each window read back, the mode the
utterance names and the mode history kept."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.models import ensure_installed
from tests.support.outputs import speak
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.sounddevice import FakeSoundDevice
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.dictation.session import Dictation
from voxtray.history.store import History
from voxtray.models.store import ModelStore

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"


@dataclass(frozen=True)
class Arrived:
    text: str
    """What the window read back, stripped."""
    mode: str | None
    """What the utterance said of its mode (the HUD's and `status`'s line)."""
    kept: str | None
    """The mode history kept."""


@dataclass(frozen=True)
class Window:
    name: str
    focus: Callable[[], None]
    read: Callable[[], str]


def steady(read: Callable[[], str], timeout: float = 10.0) -> str:
    """What ``read()`` returns once it has some text and stops changing for 0.5 s."""
    deadline = time.monotonic() + timeout
    last, since = read(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        elif now and time.monotonic() - since >= 0.5:
            break
    return last


def dictate_into(
    store: ModelStore, history: History, settings: Settings, windows: Sequence[Window]
) -> tuple[dict[str, Arrived], list[str]]:
    """The clip dictated once into each window; what arrived, and the warnings shown."""
    for name in store.catalog.defaults:
        ensure_installed(store, name)
    warnings: list[str] = []
    fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=4.0)
    dictation = Dictation(store, history, Callbacks(warning=warnings.append), sd_module=fake)
    arrived: dict[str, Arrived] = {}
    try:
        dictation.load(settings)
        for window in windows:
            window.focus()
            time.sleep(0.3)
            assert dictation.start()
            fake.streams[-1].wait_for(speak(fake, read_wav(CLIP)))
            utterance = dictation.stop()
            assert utterance is not None
            entry = history.get(utterance.history_id or 0)
            assert entry is not None
            arrived[window.name] = Arrived(steady(window.read).strip(), utterance.mode, entry.mode)
    finally:
        dictation.close()
    return arrived, warnings


def assert_arrived(
    arrived: Arrived, mode: str | None, *, capital: bool, stop: bool, said: str = ""
) -> None:
    """The clip's words arrived (within `SENTENCE_WER`), under ``mode`` (its summary starting
    with ``said``, history keeping its name; None: no mode), shaped as it says."""
    assert "\x16" not in arrived.text  # never Ctrl+V typed as a byte
    assert_heard(BIRCH, arrived.text, SENTENCE_WER)
    assert arrived.kept == mode
    if mode is None:
        assert arrived.mode is None
    else:
        assert (arrived.mode or "").startswith(said or mode)
    assert arrived.text[:1].isupper() is capital
    assert arrived.text.endswith(".") is stop
