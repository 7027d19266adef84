"""Dictating the same real clip into several real windows in turn, each focused as a user
would, for the modes tests on X and on sway: what each window read back, the mode the
utterance names and the mode history kept."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tests.support.dictation_rig import build_dictation
from tests.support.models import ensure_installed
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from tests.support.waiting import quiet_text
from voxtray.config import Settings
from voxtray.history.store import History
from voxtray.models.store import ModelStore


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


def dictate_into(
    store: ModelStore, history: History, settings: Settings, windows: Sequence[Window]
) -> tuple[dict[str, Arrived], list[str]]:
    """The clip dictated once into each window; what arrived, and the warnings shown."""
    for name in store.catalog.defaults:
        ensure_installed(store, name)
    rig = build_dictation(store, history, real_outputs=True)
    arrived: dict[str, Arrived] = {}
    try:
        rig.dictation.load(settings)
        for window in windows:
            window.focus()
            time.sleep(0.3)
            utterance = rig.say()
            entry = history.get(utterance.history_id or 0)
            assert entry is not None
            text = quiet_text(window.read).strip()
            arrived[window.name] = Arrived(text, utterance.mode, entry.mode)
    finally:
        rig.close()
    return arrived, rig.warnings


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
