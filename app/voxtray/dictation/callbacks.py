"""What a dictation reports to its front end: state changes, install and load progress,
each finished dictation, warnings and live text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from voxtray.choices import DictationState
from voxtray.dictation.utterance import Utterance
from voxtray.errors import VoxtrayError
from voxtray.models.progress import ProgressFn, ignore_progress


@dataclass
class Callbacks:
    """Called from whichever thread made the change; the UI marshals them."""

    state: Callable[[DictationState, str], None] = lambda state, detail: None
    progress: ProgressFn = ignore_progress
    utterance: Callable[[Utterance], None] = lambda utterance: None
    warning: Callable[[str], None] = lambda message: None
    partial: Callable[[str, str], None] = lambda committed, tentative: None
    """Live text while listening: words that stay, and the guess after them."""
    worded: Callable[[VoxtrayError], str] = str
    """A failure as this front end says it: the core's words, and where the remedy is the
    front end's own (a command, a window), how to reach it."""
