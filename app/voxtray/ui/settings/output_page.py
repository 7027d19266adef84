"""Output: how text reaches the window, and typing while speaking."""

from __future__ import annotations

from voxtray.config import Settings
from voxtray.settings_schema import Key, Section
from voxtray.ui.settings.controls import add_check, add_choice
from voxtray.ui.settings.page import Page


class OutputPage(Page):
    section = Section.OUTPUT

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.output = add_choice(self.form, Key.OUTPUT.spec, settings.output)
        self.bind(Key.OUTPUT, self.output.chosen)
        self.type_as_you_go = add_check(self.form, Key.TYPE_AS_YOU_GO.spec, settings.type_as_you_go)
        self.bind(Key.TYPE_AS_YOU_GO, self.type_as_you_go.isChecked)
