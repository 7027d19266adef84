"""The set-up window's desktop step, on GNOME and KDE Wayland: typing's one-time consent (the
RemoteDesktop portal's question, asked here, where the user expects it, rather than at the
first dictation) and how the hotkey reaches Voxtray (push-to-talk bound through the
GlobalShortcuts portal, or why not, and what to do instead)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from voxtray.desktop.consent import WHY_ASK, Consent
from voxtray.desktop.remote_keyboard import Grant
from voxtray.desktop.session import DesktopSession
from voxtray.output.base import TextOutput
from voxtray.output.portal_keys import PortalKeysOutput
from voxtray.ui.background import Job, run_in_background
from voxtray.ui.labels import selectable_text

CONSENT_WORDS = {
    Consent.UNASKED: "Not asked yet: press Allow typing, then answer the desktop's question.",
    Consent.GRANTED: "Allowed: Voxtray types into every app, browsers and terminals too.",
    Consent.DENIED: (
        "Refused: dictated text will be left on the clipboard for you to paste. "
        "Press Allow typing to be asked again."
    ),
    Consent.REVOKED: (
        "Withdrawn in the desktop's settings: dictated text will be left on the clipboard. "
        "Press Allow typing to be asked again."
    ),
}
ASKING = "Asking the desktop: answer its window."
PUSH_TO_TALK = (
    "Hotkey: the desktop binds it for Voxtray, so holding it talks and letting go types "
    "(it may ask you once to confirm the key)."
)


def needs_step(session: DesktopSession) -> bool:
    """Whether this desktop lends its keyboard only through the portal (GNOME, KDE)."""
    from voxtray.output.wtype import unsupported_desktop

    return session.wayland and unsupported_desktop(session) is not None


class PortalTyping:
    """The consent as the running app's output holds it, so the question and the session it
    opens are the output's own; a portal output of its own (``make``) where the app has none.
    """

    def __init__(
        self,
        in_use: Callable[[], TextOutput | None] = lambda: None,
        make: Callable[[], PortalKeysOutput] = PortalKeysOutput,
    ) -> None:
        self._in_use, self._make = in_use, make
        self._own: PortalKeysOutput | None = None

    def _output(self) -> PortalKeysOutput:
        current = self._in_use()
        if isinstance(current, PortalKeysOutput):
            return current
        if self._own is None:
            self._own = self._make()
        return self._own

    def problem(self) -> str | None:
        """Why the desktop lends no keyboard here, or None (asks the bus: not on the GUI
        thread)."""
        return self._output().problem()

    def state(self) -> Consent:
        return self._output().consent()

    def ask(self) -> Grant:
        """Ask the desktop (its window, or silently with a kept consent); never raises."""
        return self._output().keyboard.start()

    def close(self) -> None:
        if self._own is not None:
            self._own.close()


BY_NAME_ONLY = (
    "on this desktop the key must also be bound in the compositor's own settings; once it "
    "is, choose Hotkey backend: portal in Settings"
)


def shortcut_problem(env: Mapping[str, str]) -> str | None:
    """Why the hotkey is not push-to-talk through the portal here (as `auto` binds it),
    or None."""
    from voxtray.choices import HotkeyBackend
    from voxtray.hotkeys.chooser import auto_tries
    from voxtray.hotkeys.portal_listener import shortcuts_problem

    problem = shortcuts_problem(env)
    session = DesktopSession.from_env(env, "linux")
    if problem is None and not auto_tries(HotkeyBackend.PORTAL, session):
        return BY_NAME_ONLY  # Hyprland
    return problem


class DesktopStep(QWidget):
    """The step's page: what the question is for, the consent now and a button to ask, and
    how the hotkey works here."""

    def __init__(
        self,
        typing: PortalTyping,
        shortcut: Callable[[], str | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.typing = typing
        box = QVBoxLayout(self)
        box.addWidget(selectable_text(WHY_ASK))
        self.consent = selectable_text("")
        self.consent.setAccessibleName("Typing permission")
        box.addWidget(self.consent)
        self.allow = QPushButton("&Allow typing…")
        self.allow.setAccessibleName("Allow typing")
        self.allow.clicked.connect(self.ask)
        box.addWidget(self.allow)
        self.hotkey = selectable_text("")
        self.hotkey.setAccessibleName("Push-to-talk")
        box.addWidget(self.hotkey)
        box.addStretch(1)
        self.allow.setEnabled(False)
        self.jobs: list[Job] = [
            run_in_background(self._look, self._show_consent, "voxtray-setup-consent"),
            run_in_background(shortcut, self._show_hotkey, "voxtray-setup-shortcut"),
        ]

    def _look(self) -> tuple[str | None, Consent]:
        return self.typing.problem(), self.typing.state()

    def _show_consent(self, found: tuple[str | None, Consent] | Exception) -> None:
        if isinstance(found, Exception):
            self.consent.setText(f"The desktop could not be asked: {found}")
            return
        problem, state = found
        if problem is not None:
            self.consent.setText(
                f"This desktop lends no keyboard ({problem}): dictated text will be left on "
                "the clipboard, or inserted where the app allows it."
            )
            return
        self.consent.setText(CONSENT_WORDS[state])
        self.allow.setEnabled(state is not Consent.GRANTED)

    def ask(self) -> None:
        self.allow.setEnabled(False)
        self.consent.setText(ASKING)
        self.jobs.append(run_in_background(self.typing.ask, self._asked, "voxtray-setup-ask"))

    def _asked(self, grant: Grant | Exception) -> None:
        if isinstance(grant, Grant) and grant.granted:
            self.consent.setText(CONSENT_WORDS[Consent.GRANTED])
            return
        reason = grant.reason if isinstance(grant, Grant) else str(grant)
        self.consent.setText(f"Not allowed ({reason}). " + CONSENT_WORDS[Consent.DENIED])
        self.allow.setEnabled(True)
        self.allow.setFocus()

    def _show_hotkey(self, problem: str | Exception | None) -> None:
        if problem is None:
            self.hotkey.setText(PUSH_TO_TALK)
            return
        self.hotkey.setText(
            f"Hotkey: push-to-talk needs the desktop's shortcut portal, which is not here "
            f"({problem}). The shortcut line in the Hotkey step starts dictation with a tap "
            "and stops it with the next."
        )
