"""History & privacy: how much of the dictations' audio is kept, and where."""

from __future__ import annotations

from voxtray.config import Settings
from voxtray.paths import data_home
from voxtray.settings_schema import Key, Section
from voxtray.ui.settings.controls import add_spin
from voxtray.ui.settings.page import Page


class HistoryPage(Page):
    section = Section.HISTORY

    def __init__(self, settings: Settings) -> None:
        super().__init__(
            settings,
            "Every dictation's text is kept in a history on this computer (the tray's Recent "
            f"dictations), in {data_home()}. Nothing is sent anywhere unless Engine is remote.",
        )
        self.audio_mb = add_spin(self.form, Key.HISTORY_AUDIO_MB.spec, settings.history_audio_mb)
        self.bind(Key.HISTORY_AUDIO_MB, self.audio_mb.value)
        self.audio_days = add_spin(
            self.form, Key.HISTORY_AUDIO_DAYS.spec, settings.history_audio_days
        )
        self.bind(Key.HISTORY_AUDIO_DAYS, self.audio_days.value)
