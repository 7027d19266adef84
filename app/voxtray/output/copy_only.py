"""The last resort on Wayland desktops where nothing can type: the text goes onto the
clipboard and delivery fails with one line telling the user to press Ctrl+V, and what to
set up so Voxtray can type. Never a silent success: history keeps it as not delivered.

Measured: KDE's kwin_wayland and GNOME's mutter offer no virtual-keyboard protocol (wtype
fails); kwin serves wl-copy/wl-paste without focus. Typing there needs ydotool (uinput).
"""

from __future__ import annotations

import shutil

from voxtray.choices import OutputMethod
from voxtray.desktop.session import Desktop
from voxtray.output.base import DeliveryError, OutputBase, run_daemonizing
from voxtray.output.delivery import Delivery
from voxtray.output.target import FocusTarget

SETUP_ADVICE = (
    "to have it typed, install ydotool and let it write /dev/uinput "
    "(ydotool 1.x: run ydotoold), or use a wlroots compositor with wtype"
)


class CopyOnlyOutput(OutputBase):
    """``wl-copy`` the text, then report that the user has to paste it."""

    name = OutputMethod.CLIPBOARD

    def problem(self) -> str | None:
        if not self.session.wayland_display:
            return "copying needs a Wayland session (WAYLAND_DISPLAY is not set)"
        if shutil.which("wl-copy", path=self.env.get("PATH")) is None:
            return "wl-copy not found: sudo apt-get install wl-clipboard"
        return None

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        desktop = self.session.desktop
        where = "" if desktop is Desktop.UNKNOWN else f" on {desktop.upper()}"
        try:
            run_daemonizing(
                ["wl-copy", "--type", "text/plain;charset=utf-8"],
                env=self.tool_env(),
                timeout=2.0,
                stdin=text.encode("utf-8"),
            )
        except DeliveryError as exc:
            raise DeliveryError(f"nothing can type{where} and {exc}; {SETUP_ADVICE}") from exc
        raise DeliveryError(
            f"nothing can type{where}: the text is on the clipboard, press Ctrl+V; " + SETUP_ADVICE
        )
