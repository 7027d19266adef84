"""Model: which speech model (install, remove), its language, and where it runs."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QPushButton

from voxtray.config import Settings
from voxtray.models.store import ModelStore
from voxtray.settings_schema import Key, Section
from voxtray.text.languages import AUTO
from voxtray.ui.model_picker import ModelPicker
from voxtray.ui.settings.controls import add_choice, add_row, add_spin, help_label
from voxtray.ui.settings.page import Page

# Whisper's most used language codes; the box takes any other code typed in.
SPOKEN_LANGUAGES = (
    AUTO, "en", "de", "fr", "es", "it", "pt", "nl", "pl", "ru", "uk", "cs", "sv", "da", "fi",
    "tr", "el", "hu", "ro", "ar", "he", "hi", "zh", "ja", "ko", "vi", "id",
)  # fmt: skip


class ModelPage(Page):
    section = Section.MODEL
    selftest_requested = Signal()
    models_requested = Signal()

    def __init__(self, settings: Settings, store: ModelStore) -> None:
        super().__init__(settings)
        self.store = store
        self.model_picker = ModelPicker(store, settings.model, active=settings.model)
        self.model = self.model_picker.combo
        add_row(self.form, Key.MODEL.spec, self.model_picker, self.model)
        self.bind(Key.MODEL, lambda: self.model.currentData())
        self.language = QComboBox()
        self.language.setEditable(True)
        self.language.addItems(list(SPOKEN_LANGUAGES))
        self.language.setCurrentText(settings.language)
        add_row(self.form, Key.LANGUAGE.spec, self.language, self.language)
        self.bind(Key.LANGUAGE, lambda: self.language.currentText().strip().lower() or "en")
        self.model.currentIndexChanged.connect(self._language_applies)
        self._language_applies()
        self.engine = add_choice(self.form, Key.ENGINE.spec, settings.engine)
        self.bind(Key.ENGINE, self.engine.chosen)
        self.provider = add_choice(self.form, Key.PROVIDER.spec, settings.provider)
        self.bind(Key.PROVIDER, self.provider.chosen)
        self.gpu_index = add_spin(self.form, Key.GPU_INDEX.spec, settings.gpu_index)
        self.bind(Key.GPU_INDEX, self.gpu_index.value)
        self.precision = add_choice(self.form, Key.PRECISION.spec, settings.precision)
        self.bind(Key.PRECISION, self.precision.chosen)
        self.budget = add_spin(
            self.form, Key.RECOMMEND_BUDGET_MS.spec, settings.recommend_budget_ms
        )
        self.bind(Key.RECOMMEND_BUDGET_MS, self.budget.value)
        self.manager = QPushButton("Model m&anager: measure on this machine…")
        self.manager.setAccessibleName("Open the model manager")
        self.manager.clicked.connect(self.models_requested.emit)
        self.form.addRow(self.manager)
        self.selftest = QPushButton("Run the GPU self-&test…")
        self.selftest.setAccessibleName("Run the GPU self-test")
        self.selftest.clicked.connect(self.selftest_requested.emit)
        self.form.addRow(self.selftest)
        self.form.addRow(
            help_label("Checks that the graphics card really runs the model, and why not.")
        )

    def _language_applies(self) -> None:
        entry = self.store.catalog.models.get(self.model.currentData() or "")
        multilingual = (
            entry is not None
            and entry.family == "whisper"
            and (entry.languages == ("multilingual",) or len(entry.languages) > 1)
        )
        self.language.setEnabled(multilingual)
