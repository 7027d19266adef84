"""Remote: the transcription server, its key and model, and Test connection."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from voxtray.choices import Engine, RemoteProtocol
from voxtray.config import Settings
from voxtray.inference.remote_key import ApiKeyStore
from voxtray.inference.remote_probe import ServerReport, probe_server
from voxtray.settings_schema import Key, Section
from voxtray.ui.background import run_in_background
from voxtray.ui.plain_words import plain
from voxtray.ui.settings.controls import ChoiceBox, add_choice, add_row, add_spin
from voxtray.ui.settings.page import Page


class RemotePage(Page):
    section = Section.REMOTE

    def __init__(self, settings: Settings, engine: ChoiceBox, api_keys: ApiKeyStore) -> None:
        super().__init__(
            settings,
            "Send speech to a transcription server (such as `voxtray serve` on a computer "
            "with a graphics card) instead of this computer. If the server fails, this "
            "computer's model takes over.",
        )
        self.engine = engine
        self.api_keys = api_keys
        self.use_server = QCheckBox("&Use this server (Model → Engine: remote)")
        self.use_server.setAccessibleName("Use this server")
        self.use_server.setAccessibleDescription("the same as choosing Engine remote on Model")
        self.form.addRow(self.use_server)
        self.remote_box = QWidget()
        form = QFormLayout(self.remote_box)
        form.setContentsMargins(0, 0, 0, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.addRow(self.remote_box)
        self.remote_url = QLineEdit(settings.remote_url)
        self.remote_url.setPlaceholderText("http://gpu-box:8000 or tcp://gpu-box:10300")
        add_row(form, Key.REMOTE_URL.spec, self.remote_url, self.remote_url)
        self.bind(Key.REMOTE_URL, lambda: self.remote_url.text().strip())
        self.remote_protocol = add_choice(form, Key.REMOTE_PROTOCOL.spec, settings.remote_protocol)
        self.bind(Key.REMOTE_PROTOCOL, self.remote_protocol.chosen)
        self.remote_url.textEdited.connect(self._protocol_from_url)
        self.remote_key = QLineEdit(api_keys.get())
        self.remote_key.setEchoMode(QLineEdit.EchoMode.Password)
        key_label = QLabel("API &key")
        key_label.setBuddy(self.remote_key)
        self.remote_key.setAccessibleName("API key")
        self.remote_key.setAccessibleDescription(f"kept in {api_keys.where}, not in settings.json")
        form.addRow(key_label, self.remote_key)
        self.remote_model = QLineEdit(settings.remote_model)
        self.remote_model.setPlaceholderText("the server's default")
        add_row(form, Key.REMOTE_MODEL.spec, self.remote_model, self.remote_model)
        self.bind(Key.REMOTE_MODEL, lambda: self.remote_model.text().strip())
        self.remote_timeout = add_spin(form, Key.REMOTE_TIMEOUT_S.spec, settings.remote_timeout_s)
        self.bind(Key.REMOTE_TIMEOUT_S, self.remote_timeout.value)
        self.test_button = QPushButton("Test co&nnection")
        self.test_button.setAccessibleName("Test connection")
        self.test_result = QLabel("")
        self.test_result.setWordWrap(True)
        self.test_result.setAccessibleName("Connection test result")
        test = QWidget()
        column = QVBoxLayout(test)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.test_button)
        column.addWidget(self.test_result)
        form.addRow(test)
        self.test_button.clicked.connect(self.test_connection)
        self.engine.currentIndexChanged.connect(self._applies)
        self._applies()
        self.use_server.toggled.connect(self._use)

    def _protocol_from_url(self, url: str) -> None:
        if url.startswith("tcp://"):
            self.remote_protocol.setCurrentText(RemoteProtocol.WYOMING)
        elif url.startswith(("http://", "https://")):
            self.remote_protocol.setCurrentText(RemoteProtocol.OPENAI)

    def _applies(self) -> None:
        self.use_server.setChecked(self.engine.currentData() == Engine.REMOTE)

    def _use(self, on: bool) -> None:
        if on != (self.engine.currentData() == Engine.REMOTE):
            self.engine.setCurrentIndex(self.engine.findData(Engine.REMOTE if on else Engine.AUTO))

    def key_changed(self) -> bool:
        return self.remote_key.text().strip() != self.api_keys.get()

    def test_connection(self) -> None:
        url, key = self.remote_url.text().strip(), self.remote_key.text().strip()
        timeout = min(self.remote_timeout.value(), 10.0)
        self.test_button.setEnabled(False)
        self.test_result.setText(f"Asking {url or 'the server'}…")

        def probe() -> ServerReport:
            return probe_server(url, key, timeout)

        run_in_background(probe, self.show_report, "voxtray-probe")

    def show_report(self, report: ServerReport | Exception) -> None:
        self.test_button.setEnabled(True)
        if isinstance(report, Exception):  # it never raises; a bug would, and is said
            report = ServerReport(problem=plain(str(report)))
        self.test_result.setText(report.summary())
