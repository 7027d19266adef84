"""The user's answer to the desktop's "allow remote control" question, kept between runs.

The RemoteDesktop portal asks once; with ``persist_mode`` 2 it hands back a restore token
that starts the next session without asking (xdg-desktop-portal 1.17 and later, with a
backend that keeps permissions: GNOME 45+, Plasma 6). The token and the last answer live in
``<data>/portal-consent.json`` (0600), so `voxtray doctor`, the set-up window and the
dictation agree on whether consent was given, refused or withdrawn.
"""

from __future__ import annotations

import enum
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from voxtray.fileio import UnusableFileError, atomic_write, read_regular

log = logging.getLogger(__name__)

FILE_NAME = "portal-consent.json"
_MAX_BYTES = 64 * 1024


WHY_ASK = (
    "The desktop asks once whether Voxtray may use a keyboard of its own: that is how the "
    "dictated text is typed into other windows. Nothing is watched or recorded."
)
"""What the question is for, in the words `voxtray doctor` and the set-up window use."""


class Consent(enum.StrEnum):
    """What the user last answered; UNASKED before the first question."""

    UNASKED = "unasked"
    GRANTED = "granted"
    DENIED = "denied"
    REVOKED = "revoked"


@dataclass(frozen=True)
class ConsentRecord:
    """The last answer, when it was given (epoch seconds) and the restore token, if any."""

    state: Consent = Consent.UNASKED
    restore_token: str | None = None
    when: float = 0.0


class ConsentStore:
    """``portal-consent.json`` in a data folder.

    Args:
        folder: The data folder (created on the first save).
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / FILE_NAME

    def load(self) -> ConsentRecord:
        """The record; a missing, unreadable or foreign file reads as never asked."""
        try:
            raw = json.loads(read_regular(self.path, _MAX_BYTES))
        except FileNotFoundError:
            return ConsentRecord()
        except (OSError, UnusableFileError, ValueError) as exc:
            log.warning("ignoring %s: %s", self.path, exc)
            return ConsentRecord()
        if not isinstance(raw, dict):
            return ConsentRecord()
        state = raw.get("state")
        token = raw.get("restore_token")
        when = raw.get("when")
        return ConsentRecord(
            Consent(state) if state in {c.value for c in Consent} else Consent.UNASKED,
            token if isinstance(token, str) and 0 < len(token) <= 256 else None,
            float(when) if isinstance(when, int | float) else 0.0,
        )

    def save(self, state: Consent, restore_token: str | None = None) -> ConsentRecord:
        """Record ``state``; a token None keeps the one on file unless consent was refused."""
        previous = self.load()
        token = restore_token or (previous.restore_token if state is Consent.GRANTED else None)
        record = ConsentRecord(state, token, time.time())
        data = {"state": record.state.value, "restore_token": token, "when": record.when}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps(data).encode("utf-8"), 0o600)
        except OSError as exc:  # a read-only data folder: asked again next time
            log.warning("cannot keep the desktop's consent in %s: %s", self.path, exc)
        return record
