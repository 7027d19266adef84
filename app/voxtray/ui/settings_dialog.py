"""The settings dialog: every setting a user changes without editing files, validated and
saved atomically. Model, engine or provider changes reload the worker in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSlider,
    QSpinBox,
    QWidget,
)

from voxtray.choices import (
    Choice,
    Engine,
    HotkeyMode,
    OutputMethod,
    Precision,
    Provider,
    RemoteProtocol,
)
from voxtray.config import Key, Settings, SettingsError, SettingsStore
from voxtray.errors import VoxtrayError
from voxtray.inference.remote_key import ApiKeyStore
from voxtray.models.store import ModelStore
from voxtray.text.languages import AUTO
from voxtray.text.postprocess import bad_replacement_lines
from voxtray.text.vocabulary import MAX_ENTRIES, vocabulary_size
from voxtray.ui.model_picker import ModelPicker

C = TypeVar("C", bound=Choice)

# In the order the combo box lists them.
HOTKEY_MODE_LABELS = {
    HotkeyMode.HOLD_OR_TAP: "Hold to talk, tap to toggle",
    HotkeyMode.HOLD: "Hold to talk",
    HotkeyMode.TOGGLE: "Tap to toggle",
}
LevelSource = Callable[[], float | None]
"""Returns the current microphone's level in dBFS, or None while none is open."""
_QT_MODIFIERS = (
    (Qt.KeyboardModifier.ControlModifier, "ctrl"),
    (Qt.KeyboardModifier.AltModifier, "alt"),
    (Qt.KeyboardModifier.ShiftModifier, "shift"),
    (Qt.KeyboardModifier.MetaModifier, "super"),
)
_MODIFIER_KEYS = {
    Qt.Key.Key_Control,
    Qt.Key.Key_Alt,
    Qt.Key.Key_Shift,
    Qt.Key.Key_Meta,
    Qt.Key.Key_Super_L,
    Qt.Key.Key_Super_R,
}


def hotkey_from_event(event: QKeyEvent) -> str | None:
    """ "ctrl+alt+space" from a key press; None while only modifiers are down."""
    if Qt.Key(event.key()) in _MODIFIER_KEYS:
        return None
    parts = [name for flag, name in _QT_MODIFIERS if event.modifiers() & flag]
    key = Qt.Key(event.key()).name.removeprefix("Key_").lower()
    return "+".join([*parts, key])


class HotkeyEdit(QLineEdit):
    """Press the combination to capture it (or type it, e.g. "right_ctrl")."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.setPlaceholderText("press the keys…")
        self.capturing = False

    def start_capture(self) -> None:
        self.capturing = True
        self.setText("")
        self.setFocus()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if not self.capturing:
            super().keyPressEvent(event)
            return
        combo = hotkey_from_event(event)
        if combo is not None:
            self.setText(combo)
            self.capturing = False


# Whisper's most used language codes; the box takes any other code typed in.
SPOKEN_LANGUAGES = (
    AUTO,
    "en",
    "de",
    "fr",
    "es",
    "it",
    "pt",
    "nl",
    "pl",
    "ru",
    "uk",
    "cs",
    "sv",
    "da",
    "fi",
    "tr",
    "el",
    "hu",
    "ro",
    "ar",
    "he",
    "hi",
    "zh",
    "ja",
    "ko",
    "vi",
    "id",
)


class SettingsDialog(QDialog):
    saved = Signal(object)  # Settings
    api_key_saved = Signal()  # before `saved`: the remote server's key changed
    selftest_requested = Signal()

    def __init__(
        self,
        settings: Settings,
        store: ModelStore,
        settings_store: SettingsStore,
        *,
        microphones: list[Any] | None = None,
        level_source: LevelSource | None = None,
        api_keys: ApiKeyStore | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Voxtray settings")
        self.settings = settings
        self.store = store
        self.settings_store = settings_store
        self.level_source = level_source
        self.api_keys = api_keys or ApiKeyStore()
        form = QFormLayout(self)
        form.addRow("Model", self._model_row())
        form.addRow("Language", self._language_row())
        self.engine = self._combo(Engine, settings.engine)
        form.addRow("Engine", self.engine)
        form.addRow(self._remote_box())
        self.engine.currentTextChanged.connect(self._remote_applies)
        self._remote_applies()
        self.provider = self._combo(Provider, settings.provider)
        self.gpu_index = QSpinBox()
        self.gpu_index.setRange(0, 15)
        self.gpu_index.setValue(settings.gpu_index)
        provider_row = QHBoxLayout()
        provider_row.addWidget(self.provider)
        provider_row.addWidget(QLabel("GPU"))
        provider_row.addWidget(self.gpu_index)
        selftest = QPushButton("Self-test…")
        selftest.clicked.connect(self.selftest_requested.emit)
        provider_row.addWidget(selftest)
        form.addRow("Provider", provider_row)
        self.precision = self._combo(Precision, settings.precision)
        form.addRow("Precision", self.precision)
        form.addRow("Microphone", self._microphone_row(microphones or []))
        form.addRow("Hotkey", self._hotkey_row())
        self.hotkey_mode = QComboBox()
        for mode, label in HOTKEY_MODE_LABELS.items():
            self.hotkey_mode.addItem(label, mode.value)
        self.hotkey_mode.setCurrentIndex(list(HOTKEY_MODE_LABELS).index(settings.hotkey_mode))
        form.addRow("Hotkey mode", self.hotkey_mode)
        self.output = self._combo(OutputMethod, settings.output)
        form.addRow("Text output", self.output)
        self.vad = QSlider(Qt.Orientation.Horizontal)
        self.vad.setRange(5, 95)
        self.vad.setValue(round(settings.vad_threshold * 100))
        form.addRow("Speech threshold (VAD)", self.vad)
        self.hud = QCheckBox("Show the HUD")
        self.hud.setChecked(settings.hud_enabled)
        form.addRow("", self.hud)
        self.login = QCheckBox("Start Voxtray at login")
        self.login.setChecked(settings.start_at_login)
        form.addRow("", self.login)
        form.addRow(self._words_box())
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self._level_timer = QTimer(self)
        self._level_timer.timeout.connect(self._update_level)
        self._level_timer.start(100)

    @staticmethod
    def _combo(choices: type[Choice], current: Choice) -> QComboBox:
        combo = QComboBox()
        combo.addItems(choices.values())
        combo.setCurrentText(current.value)
        return combo

    @staticmethod
    def _chosen(combo: QComboBox, choices: type[C]) -> C:
        return choices(combo.currentText())

    def _model_row(self) -> QWidget:
        self.model_picker = ModelPicker(self.store, self.settings.model, active=self.settings.model)
        self.model = self.model_picker.combo
        return self.model_picker

    def _language_row(self) -> QComboBox:
        self.language = QComboBox()
        self.language.setEditable(True)
        self.language.addItems(list(SPOKEN_LANGUAGES))
        self.language.setCurrentText(self.settings.language)
        self.language.setToolTip(
            "what multilingual Whisper models transcribe (auto: detected per segment); "
            "others ignore it"
        )
        self.model.currentIndexChanged.connect(self._language_applies)
        self._language_applies()
        return self.language

    def _language_applies(self) -> None:
        entry = self.store.catalog.models.get(self.model.currentData() or "")
        multilingual = (
            entry is not None
            and entry.family == "whisper"
            and (entry.languages == ("multilingual",) or len(entry.languages) > 1)
        )
        self.language.setEnabled(multilingual)

    def done(self, result: int) -> None:
        self.model_picker.shutdown()
        super().done(result)

    def _remote_box(self) -> QWidget:
        """Server URL, protocol, API key, model and timeout; shown for engine remote."""
        self.remote_box = QWidget()
        form = QFormLayout(self.remote_box)
        form.setContentsMargins(0, 0, 0, 0)
        settings = self.settings
        self.remote_url = QLineEdit(settings.remote_url)
        self.remote_url.setPlaceholderText("http://gpu-box:8000 or tcp://gpu-box:10300")
        form.addRow("Server URL", self.remote_url)
        self.remote_protocol = self._combo(RemoteProtocol, settings.remote_protocol)
        form.addRow("Protocol", self.remote_protocol)
        self.remote_url.textEdited.connect(self._protocol_from_url)
        self.remote_key = QLineEdit(self.api_keys.get())
        self.remote_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.remote_key.setToolTip(f"kept in {self.api_keys.where}, not in the settings file")
        form.addRow("API key", self.remote_key)
        self.remote_model = QLineEdit(settings.remote_model)
        self.remote_model.setPlaceholderText("the server's default")
        form.addRow("Server model", self.remote_model)
        self.remote_timeout = QDoubleSpinBox()
        self.remote_timeout.setRange(1.0, 600.0)
        self.remote_timeout.setSuffix(" s")
        self.remote_timeout.setValue(settings.remote_timeout_s)
        self.remote_timeout.setToolTip("longer than this, and the local model does the work")
        form.addRow("Timeout", self.remote_timeout)
        return self.remote_box

    def _protocol_from_url(self, url: str) -> None:
        if url.startswith("tcp://"):
            self.remote_protocol.setCurrentText(RemoteProtocol.WYOMING)
        elif url.startswith(("http://", "https://")):
            self.remote_protocol.setCurrentText(RemoteProtocol.OPENAI)

    def _remote_applies(self) -> None:
        self.remote_box.setVisible(self.engine.currentText() == Engine.REMOTE)

    def _microphone_row(self, microphones: list[Any]) -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        self.microphone = QComboBox()
        self.microphone.addItem("System default", None)
        for device in microphones:
            self.microphone.addItem(device.name, device.name)
        self.microphone.setCurrentIndex(max(self.microphone.findData(self.settings.microphone), 0))
        self.level = QProgressBar()
        self.level.setRange(-60, 0)
        self.level.setFormat("%v dBFS")
        layout.addWidget(self.microphone, 1)
        layout.addWidget(self.level)
        return row

    def _update_level(self) -> None:
        level = self.level_source() if self.level_source is not None else None
        if level is not None:
            self.level.setValue(max(-60, min(0, round(level))))

    def _words_box(self) -> QGroupBox:
        box = QGroupBox("Words")
        form = QFormLayout(box)
        settings = self.settings
        self.spoken_punctuation = QCheckBox('Spoken punctuation ("comma", "new line")')
        self.spoken_punctuation.setChecked(settings.spoken_punctuation)
        self.spoken_commands = QCheckBox('Spoken commands ("scratch that", "press enter")')
        self.spoken_commands.setChecked(settings.spoken_commands)
        self.replacements_enabled = QCheckBox("Apply replacements")
        self.replacements_enabled.setChecked(settings.replacements_enabled)
        self.sound_cues = QCheckBox("Sound cues")
        self.sound_cues.setChecked(settings.sound_cues)
        self.live_text = QCheckBox("Show the text while speaking (HUD)")
        self.live_text.setChecked(settings.live_text)
        self.type_as_you_go = QCheckBox("Type as you go (toggle mode)")
        self.type_as_you_go.setChecked(settings.type_as_you_go)
        self.type_as_you_go.setToolTip("types words that will not change while you speak")
        for box_widget in (
            self.spoken_punctuation,
            self.spoken_commands,
            self.replacements_enabled,
            self.sound_cues,
            self.live_text,
            self.type_as_you_go,
        ):
            form.addRow("", box_widget)
        self.replacements = QPlainTextEdit(settings.replacements)
        self.replacements.setPlaceholderText("one a line: spoken -> written")
        form.addRow("Replacements", self.replacements)
        self.vocabulary = QPlainTextEdit(settings.vocabulary)
        self.vocabulary.setPlaceholderText("words and names, one a line")
        form.addRow("Vocabulary", self.vocabulary)
        form.addRow("Keep dictation audio", self._audio_row())
        return box

    def _audio_row(self) -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        self.audio_mb = QSpinBox()
        self.audio_mb.setRange(0, 100_000)
        self.audio_mb.setSuffix(" MB")
        self.audio_mb.setValue(self.settings.history_audio_mb)
        self.audio_days = QSpinBox()
        self.audio_days.setRange(0, 3650)
        self.audio_days.setSuffix(" days")
        self.audio_days.setValue(self.settings.history_audio_days)
        row.setToolTip("for re-running recent dictations; 0 keeps none")
        layout.addWidget(self.audio_mb)
        layout.addWidget(self.audio_days)
        return row

    def _words_problem(self) -> str | None:
        bad = bad_replacement_lines(self.replacements.toPlainText())
        if bad:
            lines = ", ".join(map(str, bad[:5]))
            return f"replacement line {lines} is not 'spoken -> written'"
        if vocabulary_size(self.vocabulary.toPlainText()) > MAX_ENTRIES:
            return f"the vocabulary holds at most {MAX_ENTRIES} words and names"
        return None

    def _hotkey_row(self) -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        self.hotkey = HotkeyEdit(self.settings.hotkey)
        capture = QPushButton("Capture")
        capture.clicked.connect(self.hotkey.start_capture)
        layout.addWidget(self.hotkey, 1)
        layout.addWidget(capture)
        return row

    def values(self) -> dict[Key, Any]:
        """The settings the dialog edits, as the widgets hold them now."""
        return {
            Key.MODEL: self.model.currentData(),
            Key.LANGUAGE: self.language.currentText().strip().lower() or "en",
            Key.ENGINE: self._chosen(self.engine, Engine),
            Key.PROVIDER: self._chosen(self.provider, Provider),
            Key.GPU_INDEX: self.gpu_index.value(),
            Key.PRECISION: self._chosen(self.precision, Precision),
            Key.MICROPHONE: self.microphone.currentData(),
            Key.HOTKEY: self.hotkey.text().strip(),
            Key.HOTKEY_MODE: HotkeyMode(self.hotkey_mode.currentData()),
            Key.OUTPUT: self._chosen(self.output, OutputMethod),
            Key.VAD_THRESHOLD: self.vad.value() / 100,
            Key.HUD_ENABLED: self.hud.isChecked(),
            Key.START_AT_LOGIN: self.login.isChecked(),
            Key.REMOTE_URL: self.remote_url.text().strip(),
            Key.REMOTE_PROTOCOL: self._chosen(self.remote_protocol, RemoteProtocol),
            Key.REMOTE_MODEL: self.remote_model.text().strip(),
            Key.REMOTE_TIMEOUT_S: self.remote_timeout.value(),
            Key.SPOKEN_PUNCTUATION: self.spoken_punctuation.isChecked(),
            Key.SPOKEN_COMMANDS: self.spoken_commands.isChecked(),
            Key.REPLACEMENTS_ENABLED: self.replacements_enabled.isChecked(),
            Key.SOUND_CUES: self.sound_cues.isChecked(),
            Key.LIVE_TEXT: self.live_text.isChecked(),
            Key.HISTORY_AUDIO_MB: self.audio_mb.value(),
            Key.HISTORY_AUDIO_DAYS: self.audio_days.value(),
            Key.TYPE_AS_YOU_GO: self.type_as_you_go.isChecked(),
            Key.REPLACEMENTS: self.replacements.toPlainText().strip(),
            Key.VOCABULARY: self.vocabulary.toPlainText().strip(),
        }

    def save(self) -> None:
        try:
            from voxtray.hotkeys import parse_hotkey

            changed = self.settings.replace(**{key.value: v for key, v in self.values().items()})
            parse_hotkey(changed.hotkey)
            if problem := changed.remote_problem() or self._words_problem():
                raise SettingsError(problem)
            key_changed = self.remote_key.text().strip() != self.api_keys.get()
            if key_changed:
                self.api_keys.set(self.remote_key.text())
            self.settings_store.save(changed)
        except (SettingsError, ValueError, VoxtrayError) as exc:
            QMessageBox.warning(self, "Voxtray settings", str(exc))
            return
        self.settings = changed
        if key_changed:
            self.api_key_saved.emit()
        self.saved.emit(changed)
        self.accept()
