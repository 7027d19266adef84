"""Modes: the lines that pick a mode by the app in focus, what each line was read as (or why
it is left out), and a preview of what a window of a given app would get."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QLineEdit, QPlainTextEdit

from voxtray.config import Settings
from voxtray.dictation.modes_in_force import text_options
from voxtray.modes import AppIdentity, parse_modes
from voxtray.settings_schema import Key, Section
from voxtray.text.postprocess import TextOptions, process
from voxtray.ui.settings.controls import add_row
from voxtray.ui.settings.page import Page

SAMPLE = "Send the report to Jon."


class ModesPage(Page):
    section = Section.MODES

    def __init__(self, settings: Settings) -> None:
        super().__init__(
            settings,
            "A mode changes how text is typed into one kind of app: terminals get it typed "
            "key by key, code editors without a capital or full stop, chat without the full "
            "stop. Edit the lines to change them or add your own.",
        )
        self.options = TextOptions.of(settings)
        self.lines = QPlainTextEdit(settings.modes)
        self.lines.setTabChangesFocus(True)
        self.lines.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        add_row(self.form, Key.MODES.spec, self.lines, self.lines)
        self.bind(Key.MODES, self.lines.toPlainText)
        self.read = QLabel("")
        self.read.setWordWrap(True)
        self.read.setAccessibleName("How the modes were read")
        self.form.addRow(self.read)
        self.app = QLineEdit("xterm")
        self.app.setPlaceholderText("an app's class or app_id, e.g. xterm, code, slack")
        app_label = QLabel("&Try an app")
        app_label.setBuddy(self.app)
        self.app.setAccessibleName("Try an app")
        self.app.setAccessibleDescription("what a window of this app would get")
        self.form.addRow(app_label, self.app)
        self.preview = QLabel("")
        self.preview.setWordWrap(True)
        self.preview.setAccessibleName("What this window would get")
        self.form.addRow(self.preview)
        self.lines.textChanged.connect(self.refresh)
        self.app.textChanged.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        modes = parse_modes(self.lines.toPlainText())
        read = f"{len(modes.modes)} mode(s) read: " + ", ".join(m.name for m in modes.modes)
        self.read.setText("\n".join((read, *modes.problems)))
        name = self.app.text().strip().lower()
        mode = modes.for_app(AppIdentity((name,)) if name else None)
        if mode is None:
            self.preview.setText("This window would get: no mode, the settings as they are.")
            return
        typed = process(SAMPLE, text_options(mode, self.options)).text
        self.preview.setText(f"This window would get: {mode.summary()}. {SAMPLE!r} → {typed!r}")
