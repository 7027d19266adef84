"""Type with the keyboard the desktop lends (RemoteDesktop portal): GNOME and KDE on Wayland.

Into every application, since the keys come through the compositor as a keyboard's would:
browsers, Electron, Qt without accessibility, terminals. Two ways, chosen per text:

- typed, one keysym a character, when every character is on every Latin layout (printable
  ASCII, newline, tab), at any length;
- pasted otherwise (accents, symbols, other scripts): the text is offered on the
  clipboard *and* the primary selection, and shift+Insert is pressed through the same
  keyboard. shift+Insert pastes the clipboard in GTK, Qt, Chromium and Firefox, and the
  primary selection in terminals (foot, VTE, Konsole, xterm), where ctrl+v is the byte
  0x16, not a paste. Holding both makes one key right everywhere. The user's clipboard is
  put back afterwards (`ClipboardOutput`); the primary selection is left empty.

Without the user's consent (refused, or withdrawn in the desktop's settings) nothing is
typed: the text stays on the clipboard and delivery fails with `ConsentNeeded`, to which
each front end adds how it asks again (the set-up window's Typing step, `voxtray doctor`).
Once refused or withdrawn, only the user asks again: a dictation never waits on a question
the user already answered no to.

On KWin the clipboard and the primary selection are read and offered through
`voxtray.desktop.data_control` where wl-clipboard would hang or give up (an empty
clipboard, the primary selection).
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from voxtray.choices import OutputMethod, PasteChord
from voxtray.desktop.consent import Consent, ConsentStore
from voxtray.desktop.data_control import PrimaryOffer
from voxtray.desktop.portal import PortalError
from voxtray.desktop.remote_keyboard import (
    CONTROL_L,
    INSERT,
    KEYSYMS,
    SHIFT_L,
    RemoteKeyboard,
    portal_problem,
    typable,
)
from voxtray.output.base import OutputBase, check_key
from voxtray.output.clipboard import WL_COPY_TRIES, ClipboardOutput
from voxtray.output.delivery import Delivery
from voxtray.output.selection import TEXT_TYPE, read
from voxtray.output.target import FocusTarget
from voxtray.output.tools import ConsentNeeded, DeliveryError, end_group

TYPE_FIXED_MS = 2.0
TYPE_PER_CHAR_MS = 3.5
"""Measured on headless mutter: 11 characters in 37 ms (a press and a release each)."""
TYPE_BUDGET_MS = 100.0
"""Text whose typing would take longer is pasted (the paste shows it in about 50 ms)."""

CHORD_KEYSYMS = {
    PasteChord.SHIFT_INSERT: (SHIFT_L, INSERT),
    PasteChord.CTRL_V: (CONTROL_L, ord("v")),
    PasteChord.CTRL_SHIFT_V: (CONTROL_L, SHIFT_L, ord("v")),
}
PRIMARY_WAIT_S = 1.0
PRIMARY_TYPES = (TEXT_TYPE, "text/plain", "UTF8_STRING", "STRING", "TEXT")

log = logging.getLogger(__name__)


def should_type(text: str) -> bool:
    """Whether ``text`` is typed rather than pasted: whenever its characters allow, at any
    length. Pasting is faster past `TYPE_BUDGET_MS` but needs the clipboard, which
    wl-clipboard reaches on GNOME only by taking the focus for a moment: into Chromium
    that read-back failed (measured on mutter 43), while keys always arrive."""
    return typable(text)


def _default_store() -> ConsentStore:
    from voxtray.paths import data_home

    return ConsentStore(data_home())


class PortalKeysOutput(OutputBase):
    """Keys through the RemoteDesktop portal, and pastes through the same keys.

    Args:
        env: The session's environment; ``os.environ`` if None.
        platform: ``sys.platform`` if None.
        keyboard: The portal session; one on ``env`` with the data folder's consent if None.
    """

    name = OutputMethod.PORTAL

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        platform: str | None = None,
        keyboard: RemoteKeyboard | None = None,
    ) -> None:
        super().__init__(env, platform)
        self.keyboard = keyboard or RemoteKeyboard(self.env, _default_store())
        self.paster = PortalPaste(self.env, self.platform, self.press_paste)
        self._portal_problem: str | None = None
        self._checked = False
        self._starting: threading.Thread | None = None

    def problem(self) -> str | None:
        if not self.platform.startswith("linux"):
            return "the desktop portal's keyboard is for Linux desktops"
        if not self.session.wayland:
            return "the desktop portal's keyboard is used on Wayland"
        if not self._checked:
            self._portal_problem = portal_problem(self.env)
            self._checked = True
        return self._portal_problem or self.paster.tools_problem()

    def consent(self) -> Consent:
        return self.keyboard.consent.load().state

    def refused(self) -> bool:
        """Whether the user refused or withdrew the consent: then only the user's own
        request asks again (a question at every dictation would hold the text up to
        `CONSENT_TIMEOUT_S`)."""
        return self.consent() in (Consent.DENIED, Consent.REVOKED)

    def prepare(self) -> None:
        """Start the session on a thread of its own (the desktop may ask the user now)."""
        if self.keyboard.active or self._starting is not None or self.refused():
            return
        self._starting = threading.Thread(
            target=self.keyboard.start, name="voxtray-portal-start", daemon=True
        )
        self._starting.start()

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        self._allowed(text)
        if should_type(text):
            return self.type_chunks(text, target, self._type)
        return self.paster.deliver(text, target)

    def _allowed(self, text: str) -> None:
        """Start the session if needed; without consent the text goes to the clipboard.

        Raises:
            ConsentNeeded: Remote control is not allowed; the text is on the clipboard.
        """
        starting = self._starting
        if starting is not None:
            starting.join()
            self._starting = None
        if self.keyboard.active:
            return
        state = self.consent()
        if state in (Consent.DENIED, Consent.REVOKED):
            reason = f"it was {'refused' if state is Consent.DENIED else 'withdrawn'}"
        else:
            grant = self.keyboard.start()
            if grant.granted:
                return
            reason = grant.reason
        kept = self.spill(text) if text else None
        where = "the text is on the clipboard, press Ctrl+V" if kept is None else kept
        raise ConsentNeeded(
            f"typing needs the desktop's permission for remote control ({reason}): {where}"
        )

    def _type(self, text: str) -> None:
        try:
            self.keyboard.type_text(text)
        except PortalError as exc:
            raise DeliveryError(str(exc)) from exc

    def press_paste(self, chord: PasteChord = PasteChord.SHIFT_INSERT) -> None:
        """Press ``chord``: by default shift+Insert (see the module's notes)."""
        self._chord(CHORD_KEYSYMS[chord])

    def _chord(self, keys: tuple[int, ...]) -> None:
        try:
            self.keyboard.chord(keys)
        except PortalError as exc:
            raise DeliveryError(str(exc)) from exc

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times."""
        check_key(name, count)
        self._allowed("")
        for _ in range(count):
            self._chord((KEYSYMS[name],))

    def close(self) -> None:
        self.keyboard.close()


class PortalPaste(ClipboardOutput):
    """`ClipboardOutput` whose paste key is pressed by the portal's keyboard, with the text
    on the primary selection as well for terminals.

    Args:
        env: The session's environment.
        platform: ``sys.platform``.
        press: Presses the paste key.
        journal_file: As for `ClipboardOutput`.
    """

    def __init__(
        self,
        env: Mapping[str, str],
        platform: str,
        press: Callable[[PasteChord], None],
        journal_file: Path | None = None,
    ) -> None:
        super().__init__(env, platform, journal_file=journal_file)
        self._press = press
        self._text = ""
        self.name = OutputMethod.PORTAL

    def tools_problem(self) -> str | None:
        return self._tools_problem()

    def problem(self) -> str | None:
        return self._tools_problem()

    def _press_paste(self) -> Callable[[], None]:
        chord = self.paste_chord or PasteChord.SHIFT_INSERT
        return lambda: self._press(chord)

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        self._text = text
        return super()._deliver(text, target)

    def _paste(self, offer: object, press: Callable[[], None]) -> None:
        primary = _PrimaryOffer(self.tool_env())
        try:
            primary.start(self._text)
            super()._paste(offer, press)  # type: ignore[arg-type]
        finally:
            primary.stop()


class _PrimaryOffer:
    """The text as the primary selection while pasting: through data-control where the
    compositor has it (KWin, where ``wl-copy --primary`` finds no primary selection), else
    ``wl-copy --primary --foreground`` (GNOME).

    A failure is not the paste's: the clipboard is what most applications paste from.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None
        self._owned: PrimaryOffer | None = None

    def start(self, text: str) -> None:
        owned = PrimaryOffer(self._env, PRIMARY_TYPES)
        if owned.start(text):
            self._owned = owned
            return
        self._start_tool(text)

    def _start_tool(self, text: str) -> None:
        """wl-copy, tried again when it exits at once (mutter cancelled its offer: see
        `voxtray.output.clipboard.WL_COPY_TRIES`)."""
        args = ["wl-paste", "--primary", "--no-newline", "--type", TEXT_TYPE]
        for _attempt in range(WL_COPY_TRIES):
            try:
                self._proc = proc = subprocess.Popen(
                    ["wl-copy", "--primary", "--foreground", "--type", TEXT_TYPE],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=self._env,
                    start_new_session=True,
                )
                assert proc.stdin is not None
                proc.stdin.write(text.encode("utf-8"))
                proc.stdin.close()
            except OSError as exc:
                log.warning("cannot offer the primary selection: %s", exc)
                return
            deadline = time.monotonic() + PRIMARY_WAIT_S
            while time.monotonic() < deadline and proc.poll() is None:
                with contextlib.suppress(DeliveryError):
                    if read(args, self._env) == text.encode("utf-8"):
                        return
                time.sleep(0.005)
            if proc.poll() is None:
                break
        log.warning("the primary selection did not take the text; terminals may paste other text")

    def stop(self) -> None:
        if self._owned is not None:
            self._owned.stop()
            self._owned = None
        if self._proc is not None:
            end_group(self._proc, 0.0)
            self._proc = None
