"""Words: spoken punctuation and commands (with examples run through the real text
processing), replacements with a live preview, and the vocabulary."""

from __future__ import annotations

import dataclasses
import html

from PySide6.QtWidgets import QLabel, QLineEdit, QVBoxLayout, QWidget

from voxtray.config import Settings
from voxtray.settings_schema import Key, Section
from voxtray.text.postprocess import TextOptions, parse_replacements, process
from voxtray.ui.settings.controls import add_check, add_row, help_label
from voxtray.ui.settings.page import Page
from voxtray.ui.settings.replacements_editor import ReplacementsEditor
from voxtray.ui.settings.vocabulary_editor import VocabularyEditor

# (what you say, what the model hears before Voxtray's text handling)
PUNCTUATION_EXAMPLE = (
    "hello comma how are you question mark",
    "Hello, comma, how are you? Question mark.",
)
COMMAND_EXAMPLE = ("see you press enter", "See you. Press enter.")


class WordsPage(Page):
    section = Section.WORDS

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.spoken_punctuation = add_check(
            self.form, Key.SPOKEN_PUNCTUATION.spec, settings.spoken_punctuation
        )
        self.bind(Key.SPOKEN_PUNCTUATION, self.spoken_punctuation.isChecked)
        self.punctuation_example = help_label("")
        self.form.addRow(self.punctuation_example)
        self.spoken_commands = add_check(
            self.form, Key.SPOKEN_COMMANDS.spec, settings.spoken_commands
        )
        self.bind(Key.SPOKEN_COMMANDS, self.spoken_commands.isChecked)
        self.command_example = help_label("")
        self.form.addRow(self.command_example)
        self.replacements_enabled = add_check(
            self.form, Key.REPLACEMENTS_ENABLED.spec, settings.replacements_enabled
        )
        self.bind(Key.REPLACEMENTS_ENABLED, self.replacements_enabled.isChecked)
        self.replacements = ReplacementsEditor(settings.replacements)
        add_row(self.form, Key.REPLACEMENTS.spec, self.replacements, self.replacements.table)
        self.bind(Key.REPLACEMENTS, lambda: self.replacements.toPlainText().strip())
        self.form.addRow(self._try_it())
        self.vocabulary = VocabularyEditor(settings.vocabulary)
        add_row(self.form, Key.VOCABULARY.spec, self.vocabulary, self.vocabulary.entry)
        self.bind(Key.VOCABULARY, lambda: self.vocabulary.toPlainText().strip())
        for box in (self.spoken_punctuation, self.spoken_commands, self.replacements_enabled):
            box.toggled.connect(self.refresh_preview)
        self.replacements.changed.connect(self.refresh_preview)
        self.refresh_preview()

    def _try_it(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        self.try_text = QLineEdit()
        self.try_text.setPlaceholderText(
            "type what you would say, e.g. Hello vox tray, comma, how are you?"
        )
        self.try_text.setAccessibleName("Try it: what you would say")
        label = QLabel("&Try it:")
        label.setBuddy(self.try_text)
        self.try_result = QLabel()
        self.try_result.setWordWrap(True)
        self.try_result.setAccessibleName("Try it: what would be written")
        layout.addWidget(label)
        layout.addWidget(self.try_text)
        layout.addWidget(self.try_result)
        self.try_text.textChanged.connect(self.refresh_preview)
        return box

    def _options(self) -> TextOptions:
        # Built without checking the replacements: a row being typed must not blank the
        # preview of the others (Save refuses what is unfinished).
        return dataclasses.replace(
            TextOptions.of(self.settings),
            spoken_punctuation=self.spoken_punctuation.isChecked(),
            spoken_commands=self.spoken_commands.isChecked(),
            use_replacements=self.replacements_enabled.isChecked(),
            replacements=parse_replacements(self.replacements.toPlainText()),
        )

    def written(self, said: str) -> str:
        """What dictating `said` would type with the page's words settings."""
        done = process(said, self._options())
        extra = " [presses Enter]" if done.press_enter else ""
        return done.text + extra

    def refresh_preview(self) -> None:
        for label, (said, heard) in (
            (self.punctuation_example, PUNCTUATION_EXAMPLE),
            (self.command_example, COMMAND_EXAMPLE),
        ):
            shown = html.escape(self.written(heard)).replace("\n", "⏎")
            label.setText(f"Example: you say “{said}”, Voxtray writes “{shown}”")
        said = self.try_text.text()
        self.try_result.setText(f"→ {self.written(said)}" if said.strip() else "")
