"""General: the hotkey and how it behaves, the HUD, sound cues, start at login."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from voxtray.config import Settings
from voxtray.settings_schema import Key, Section
from voxtray.ui.settings.controls import add_check, add_choice, add_row
from voxtray.ui.settings.hotkey_edit import HotkeyEdit
from voxtray.ui.settings.page import Page


class GeneralPage(Page):
    section = Section.GENERAL

    def __init__(self, settings: Settings) -> None:
        super().__init__(
            settings, "Hold the hotkey, speak, let go: the text is typed where you are."
        )
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        self.hotkey = HotkeyEdit(settings.hotkey)
        self.capture = QPushButton("Ca&pture")
        self.capture.setAccessibleName("Capture the hotkey")
        self.capture.setAccessibleDescription("then press the keys; Esc cancels")
        self.capture.clicked.connect(self.hotkey.start_capture)
        layout.addWidget(self.hotkey, 1)
        layout.addWidget(self.capture)
        add_row(self.form, Key.HOTKEY.spec, row, self.hotkey)
        self.bind(Key.HOTKEY, lambda: self.hotkey.text().strip())
        self.hotkey_mode = add_choice(
            self.form, Key.HOTKEY_MODE.spec, settings.hotkey_mode, labels=True
        )
        self.bind(Key.HOTKEY_MODE, self.hotkey_mode.chosen)
        self.hud = add_check(self.form, Key.HUD_ENABLED.spec, settings.hud_enabled)
        self.bind(Key.HUD_ENABLED, self.hud.isChecked)
        self.live_text = add_check(self.form, Key.LIVE_TEXT.spec, settings.live_text)
        self.bind(Key.LIVE_TEXT, self.live_text.isChecked)
        self.sound_cues = add_check(self.form, Key.SOUND_CUES.spec, settings.sound_cues)
        self.bind(Key.SOUND_CUES, self.sound_cues.isChecked)
        self.login = add_check(self.form, Key.START_AT_LOGIN.spec, settings.start_at_login)
        self.bind(Key.START_AT_LOGIN, self.login.isChecked)
        self.first_run_done = add_check(self.form, Key.FIRST_RUN_DONE.spec, settings.first_run_done)
        self.bind(Key.FIRST_RUN_DONE, self.first_run_done.isChecked)
