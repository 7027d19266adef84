"""No listener: the desktop's own shortcut runs `voxtray toggle` (or `start`/`stop`)."""

from __future__ import annotations

from collections.abc import Mapping

from voxtray.choices import HotkeyBackend
from voxtray.hotkeys.base import Callback, ListenerBase
from voxtray.hotkeys.keys import Hotkey

BIND_ADVICE = (
    "bind `voxtray toggle` to a shortcut in your desktop's keyboard settings (or "
    "`voxtray start` on press and `voxtray stop` on release, for push-to-talk)"
)
"""What the user does instead of a global hotkey, for messages."""


class NoBackend(ListenerBase):
    """No listener: the desktop's own shortcut runs `voxtray toggle`/`start`/`stop`.

    Attributes:
        reason: Why this backend was chosen, with what the user should do.
    """

    name = HotkeyBackend.NONE

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        platform: str | None = None,
        *,
        reason: str = f"global hotkeys are off: {BIND_ADVICE}",
    ) -> None:
        super().__init__(env, platform)
        self.reason = reason

    def available(self) -> tuple[bool, str]:
        """Always available; the reason says how to bind the shortcut."""
        return True, self.reason

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Do nothing: the desktop delivers the shortcut through the command line."""

    def stop(self) -> None:
        """Do nothing."""
