"""Advanced: the expert settings, each with what it does."""

from __future__ import annotations

from voxtray import settings_schema as S
from voxtray.config import Settings
from voxtray.settings_schema import Key, Section
from voxtray.ui.settings.controls import add_choice, add_spin
from voxtray.ui.settings.page import Page


class AdvancedPage(Page):
    section = Section.ADVANCED

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, "The defaults suit most people; change these to fix a problem.")
        self.hotkey_backend = add_choice(
            self.form, Key.HOTKEY_BACKEND.spec, settings.hotkey_backend
        )
        self.bind(Key.HOTKEY_BACKEND, self.hotkey_backend.chosen)
        self.threads = add_spin(self.form, Key.THREADS.spec, min(settings.threads, S.max_threads()))
        self.bind(Key.THREADS, self.threads.value)
        self.min_silence = add_spin(self.form, Key.MIN_SILENCE_MS.spec, settings.min_silence_ms)
        self.bind(Key.MIN_SILENCE_MS, self.min_silence.value)
        self.preroll = add_spin(self.form, Key.PREROLL_MS.spec, settings.preroll_ms)
        self.bind(Key.PREROLL_MS, self.preroll.value)
        self.tail = add_spin(self.form, Key.TAIL_MS.spec, settings.tail_ms)
        self.bind(Key.TAIL_MS, self.tail.value)
