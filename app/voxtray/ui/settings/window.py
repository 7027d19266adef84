"""The settings window: a sidebar of sections, each page in a scroll area, Save and
Cancel always in view. Saving a model that is not installed offers to install it first.
Save writes what the user changed over settings.json (`SettingsWriter`)."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QListWidget,
    QMessageBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from voxtray.config import Settings, SettingsError
from voxtray.errors import VoxtrayError
from voxtray.inference.remote_key import ApiKeyStore
from voxtray.models.store import ModelStore
from voxtray.settings_schema import Key, Section
from voxtray.settings_writer import SettingsWriter, changes_between
from voxtray.ui.settings.advanced_page import AdvancedPage
from voxtray.ui.settings.cleanup_page import CleanupPage
from voxtray.ui.settings.general_page import GeneralPage
from voxtray.ui.settings.history_page import HistoryPage
from voxtray.ui.settings.microphone_page import InputDevice, LevelSource, MicrophonePage
from voxtray.ui.settings.model_page import ModelPage
from voxtray.ui.settings.modes_page import ModesPage
from voxtray.ui.settings.output_page import OutputPage
from voxtray.ui.settings.page import Page
from voxtray.ui.settings.remote_page import RemotePage
from voxtray.ui.settings.words_page import WordsPage

TITLE = "Voxtray settings"
PREFERRED = (820, 640)


class SettingsWindow(QDialog):
    # The settings as the window holds them, and what the user changed ({name: value})
    saved = Signal(object, object)
    api_key_saved = Signal()  # before `saved`: the remote server's key changed
    selftest_requested = Signal()
    models_requested = Signal()

    def __init__(
        self,
        settings: Settings,
        store: ModelStore,
        writer: SettingsWriter,
        *,
        microphones: Sequence[InputDevice] = (),
        level_source: LevelSource | None = None,
        api_keys: ApiKeyStore | None = None,
        cleanup_keys: ApiKeyStore | None = None,
        defer_reload: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        """With `defer_reload`, settings that reload the model are written by whoever
        loads it, once it has loaded (`saved` still carries them)."""
        super().__init__(parent)
        self.defer_reload = defer_reload
        self.setWindowTitle(TITLE)
        self.setAccessibleName(TITLE)
        self.settings = settings
        self.store = store
        self.writer = writer
        self.api_keys = api_keys or ApiKeyStore()
        self._save_after_install = False
        general = GeneralPage(settings)
        microphone = MicrophonePage(settings, microphones, level_source)
        model = ModelPage(settings, store)
        words = WordsPage(settings)
        remote = RemotePage(settings, model.engine, self.api_keys)
        output, history, advanced = (
            OutputPage(settings),
            HistoryPage(settings),
            AdvancedPage(settings),
        )
        self.cleanup = CleanupPage(settings, cleanup_keys)
        self.modes = ModesPage(settings)
        self.pages: list[Page] = [
            general, microphone, model, output, words, remote, self.cleanup, self.modes,
            history, advanced,
        ]  # fmt: skip
        self._expose(general, microphone, model, words, remote)
        self.output, self.type_as_you_go = output.output, output.type_as_you_go
        self.audio_mb, self.audio_days = history.audio_mb, history.audio_days
        self.advanced = advanced
        model.selftest_requested.connect(self.selftest_requested.emit)
        model.models_requested.connect(self.models_requested.emit)
        self.model_picker.install_done.connect(self._installed)
        self.sidebar = QListWidget()
        self.sidebar.setAccessibleName("Sections")
        self.stack = QStackedWidget()
        for page in self.pages:
            self.sidebar.addItem(page.section.value)
            self.stack.addWidget(page)
        self.sidebar.setFixedWidth(self.sidebar.sizeHintForColumn(0) + 24)
        self.sidebar.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.sidebar.setCurrentRow(0)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        save = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        if save is not None:
            save.setText("&Save")
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        body = QHBoxLayout()
        body.addWidget(self.sidebar)
        body.addWidget(self.stack, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addWidget(self.buttons)
        for number in range(len(self.pages)):
            # Ctrl+1 .. Ctrl+9, and Ctrl+0 for the tenth page, as the digits run on a keyboard.
            shortcut = QShortcut(QKeySequence(f"Ctrl+{(number + 1) % 10}"), self)
            shortcut.activated.connect(lambda n=number: self.sidebar.setCurrentRow(n))
        self._fit_screen()

    def _expose(
        self,
        general: GeneralPage,
        microphone: MicrophonePage,
        model: ModelPage,
        words: WordsPage,
        remote: RemotePage,
    ) -> None:
        """The controls other code and tests reach by name."""
        self.hotkey, self.hotkey_mode = general.hotkey, general.hotkey_mode
        self.hud, self.sound_cues, self.live_text = (
            general.hud,
            general.sound_cues,
            general.live_text,
        )
        self.microphone, self.level, self.vad = (
            microphone.microphone,
            microphone.level,
            microphone.vad,
        )
        self.model_picker, self.model, self.language = (
            model.model_picker,
            model.model,
            model.language,
        )
        self.engine, self.provider, self.gpu_index = model.engine, model.provider, model.gpu_index
        self.precision = model.precision
        self.spoken_punctuation = words.spoken_punctuation
        self.spoken_commands = words.spoken_commands
        self.replacements_enabled = words.replacements_enabled
        self.replacements, self.vocabulary = words.replacements, words.vocabulary
        self.words = words
        self.remote_page = remote
        self.remote_box, self.remote_url = remote.remote_box, remote.remote_url
        self.remote_protocol, self.remote_key = remote.remote_protocol, remote.remote_key
        self.remote_model, self.remote_timeout = remote.remote_model, remote.remote_timeout

    def _fit_screen(self) -> None:
        screen = self.screen() or QGuiApplication.primaryScreen()
        width, height = PREFERRED
        if screen is not None:
            area = screen.availableGeometry()
            width, height = min(width, area.width() - 40), min(height, area.height() - 60)
        self.resize(width, height)

    def show_section(self, section: Section) -> None:
        self.sidebar.setCurrentRow([p.section for p in self.pages].index(section))

    def values(self) -> dict[Key, object]:
        """Every setting, as the controls hold them now."""
        found: dict[Key, object] = {}
        for page in self.pages:
            found.update(page.values())
        return found

    def model_installed(self, name: str) -> bool:
        return self.store.get(name) is not None

    def done(self, result: int) -> None:
        self.model_picker.shutdown()
        super().done(result)

    def save(self) -> None:
        try:
            # Every value is checked by its setting, as a hand-edited file is.
            changed = self.settings.replace(**{key.value: v for key, v in self.values().items()})
            if problem := changed.remote_problem():
                raise SettingsError(problem)
        except (SettingsError, VoxtrayError) as exc:
            QMessageBox.warning(self, TITLE, str(exc))
            return
        if changed.model != self.settings.model and not self.model_installed(changed.model):
            self._offer_install(changed.model)
            return
        changes = changes_between(self.settings, changed)
        try:
            key_changed = self.remote_page.key_changed()
            if key_changed:
                self.api_keys.set(self.remote_key.text())
            if self.cleanup.key_changed():
                self.cleanup.save_key()
            self.writer.write(changes, defer_reload=self.defer_reload)
        except (SettingsError, VoxtrayError) as exc:
            QMessageBox.warning(self, TITLE, str(exc))
            return
        self.settings = changed
        if key_changed:
            self.api_key_saved.emit()
        self.saved.emit(changed, changes)
        self.accept()

    def _offer_install(self, name: str) -> None:
        self.show_section(Section.MODEL)
        title = self.model_picker.rows[name].title if name in self.model_picker.rows else name
        text = (
            f"{title} is not installed yet, so Voxtray cannot switch to it.\n\n"
            "Install it now? The model in use keeps working meanwhile, and Settings are "
            "saved once the install has finished."
        )
        if self.model_picker.ask(self, "Install the model?", text, "Install"):
            self._save_after_install = True
            self.model_picker.install_selected()
            if not self.model_picker.busy:  # consent declined
                self._save_after_install = False

    def _installed(self, error: str) -> None:
        if self._save_after_install:
            self._save_after_install = False
            if not error and self.model_installed(str(self.model.currentData())):
                self.save()

    def keys_shown(self) -> frozenset[Key]:
        """The settings some page shows (all of them)."""
        return frozenset(key for page in self.pages for key in page.shown_keys())
