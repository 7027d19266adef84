"""Clean-up: the chat endpoint that tidies each dictation's text, its key and model, the
instructions, the time it may take, and the hosts the user allowed by name."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QLineEdit, QMessageBox, QPushButton

from voxtray.cleanup import (
    ConsentedHosts,
    check_endpoint,
    cleanup_key_store,
    consent_question,
    endpoint_problem,
)
from voxtray.config import Settings
from voxtray.inference.remote_key import ApiKeyStore
from voxtray.settings_schema import Key, Section
from voxtray.ui.settings.controls import add_check, add_row, add_spin
from voxtray.ui.settings.page import Page


class CleanupPage(Page):
    section = Section.CLEANUP

    def __init__(self, settings: Settings, keys: ApiKeyStore | None = None) -> None:
        super().__init__(
            settings,
            "Off until you turn it on. Your text is sent only to this computer's server, or to "
            "another host once you allow it here by name; audio never is. An answer that "
            "changes your words is refused, and your text is typed as you said it.",
        )
        self.keys = keys or cleanup_key_store()
        self.enabled = add_check(self.form, Key.CLEANUP_ENABLED.spec, settings.cleanup_enabled)
        self.bind(Key.CLEANUP_ENABLED, self.enabled.isChecked)
        self.endpoint = self._line(Key.CLEANUP_ENDPOINT, settings.cleanup_endpoint, "")
        self.model = self._line(Key.CLEANUP_MODEL, settings.cleanup_model, "the server's own")
        self.prompt = self._line(
            Key.CLEANUP_PROMPT, settings.cleanup_prompt, "default, casual, formal or your own"
        )
        self.key = QLineEdit(self.keys.get())
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        key_label = QLabel("API ke&y")
        key_label.setBuddy(self.key)
        self.key.setAccessibleName("API key")
        self.key.setAccessibleDescription(f"kept in {self.keys.where}, not in settings.json")
        self.form.addRow(key_label, self.key)
        self.budget = add_spin(self.form, Key.CLEANUP_BUDGET_MS.spec, settings.cleanup_budget_ms)
        self.bind(Key.CLEANUP_BUDGET_MS, self.budget.value)
        self.timeout = add_spin(self.form, Key.CLEANUP_TIMEOUT_S.spec, settings.cleanup_timeout_s)
        self.bind(Key.CLEANUP_TIMEOUT_S, self.timeout.value)
        self.hosts = self._line(
            Key.CLEANUP_CONSENTED_HOSTS,
            settings.cleanup_consented_hosts.replace("\n", ", "),
            "none: only this computer",
        )
        self.where = QLabel("")
        self.where.setWordWrap(True)
        self.where.setAccessibleName("Where your text goes")
        self.allow = QPushButton("A&llow this host…")
        self.allow.setAccessibleName("Allow this host")
        self.form.addRow(self.where)
        self.form.addRow(self.allow)
        self.allow.clicked.connect(self.ask_consent)
        for line in (self.endpoint, self.hosts):
            line.textChanged.connect(self.show_where)
        self.show_where()

    def _line(self, key: Key, value: str, placeholder: str) -> QLineEdit:
        line = QLineEdit(value)
        line.setPlaceholderText(placeholder)
        add_row(self.form, key.spec, line, line)
        self.bind(key, lambda: line.text().strip())
        return line

    def _consented(self) -> ConsentedHosts:
        return ConsentedHosts.parse(self.hosts.text())

    def show_where(self) -> None:
        """Say where the text would go, and offer the consent when the host needs it."""
        url = self.endpoint.text().strip()
        problem = endpoint_problem(url)
        permission = None if problem else check_endpoint(url, self._consented())
        self.allow.setVisible(permission is not None and not permission.allowed)
        if problem is not None:
            self.where.setText(f"The endpoint cannot be used: {problem}.")
        elif permission is not None and permission.local:
            self.where.setText("Your text stays on this computer.")
        elif permission is not None and permission.allowed:
            self.where.setText(f"Your text goes to {permission.host}, which you allowed.")
        elif permission is not None:
            self.where.setText(f"Your text would go to {permission.host}: not allowed yet.")

    def ask_consent(self) -> None:
        """Ask, naming the host; a yes adds it to the allowed hosts."""
        url = self.endpoint.text().strip()
        permission = check_endpoint(url, self._consented())
        if permission.allowed or not permission.host:
            return
        answer = QMessageBox.question(
            self, "Send your text to another computer?", consent_question(url)
        )
        if answer == QMessageBox.StandardButton.Yes:
            hosts = self._consented().with_host(permission.host)
            self.hosts.setText(", ".join(sorted(hosts.hosts)))

    def key_changed(self) -> bool:
        return self.key.text().strip() != self.keys.get()

    def save_key(self) -> None:
        self.keys.set(self.key.text())
