"""Why this output types here, in one line: `voxtray status --json` and the HUD details."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from voxtray.choices import OutputMethod
from voxtray.desktop.session import DesktopSession
from voxtray.output.base import OutputBase, TextOutput


@runtime_checkable
class Prepared(Protocol):
    """An output with set-up worth doing before the first dictation (asking consent)."""

    def prepare(self) -> None: ...


def prepare(output: TextOutput) -> None:
    """Let an output that asks the desktop for something ask now, in the background."""
    if isinstance(output, Prepared):
        output.prepare()


def _desktop(session: DesktopSession) -> str:
    name = session.desktop.value.upper() if session.desktop.value != "unknown" else "this desktop"
    return f"{name} on {session.server.value.capitalize()}"


def explain(output: TextOutput) -> str:
    """Why ``output`` is the way text reaches windows on this session."""
    session = output.session if isinstance(output, OutputBase) else None
    where = _desktop(session) if session is not None else "this desktop"
    name = output.name
    if name is OutputMethod.PORTAL:
        consent = getattr(output, "consent", lambda: None)()
        state = f"; permission {consent}" if consent is not None else ""
        return (
            f"{where}: keys through the desktop's RemoteDesktop portal (typed, or pasted with "
            f"shift+Insert for text beyond ASCII and long text){state}"
        )
    reasons = {
        OutputMethod.WTYPE: "wtype through the compositor's virtual-keyboard protocol",
        OutputMethod.YDOTOOL: "ydotool's daemon writes a uinput keyboard",
        OutputMethod.XDOTOOL: "xdotool sends X11 key events",
        OutputMethod.PYNPUT: "pynput sends key events",
        OutputMethod.KEYBOARD: "the keyboard package sends key events",
        OutputMethod.ATSPI: "inserted through the accessibility bus; no keyboard can be had",
        OutputMethod.CLIPBOARD: "copied to the clipboard; nothing here can press keys",
    }
    return f"{where}: {reasons.get(name, str(name))}"
