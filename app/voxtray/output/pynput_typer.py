"""Type through pynput: X11 (as XSendEvent key events), Windows and macOS.

pynput opens its X connection from the process's DISPLAY, not from the ``env`` mapping.
On X11 its events carry only the modifiers pynput itself pressed, so a held ctrl cannot
turn them into shortcuts in most applications; modifiers are still waited for, and
released if the wait runs out, for the applications that read the server's state.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from voxtray.choices import OutputMethod, PasteChord
from voxtray.desktop import xlib
from voxtray.errors import first_line
from voxtray.output import binder, modifiers
from voxtray.output.base import Delivery, DeliveryError, FocusTarget, OutputBase, check_key

log = logging.getLogger(__name__)

# pynput's names for the keys `press_key` takes.
_PRESS_KEYS = {
    "BackSpace": "backspace",
    "Return": "enter",
    "Tab": "tab",
    "Escape": "esc",
    "Delete": "delete",
}
_PYNPUT_KEYS = {"ctrl": "ctrl", "alt": "alt", "shift": "shift", "super": "cmd", "altgr": "alt_gr"}


def load_keyboard() -> ModuleType:
    """Import ``pynput.keyboard``; on X11 this connects to the display and can fail."""
    return importlib.import_module("pynput.keyboard")


def x_server_reachable(display: str) -> bool:
    """Whether an X connection opens (True when libX11 cannot be loaded to ask)."""
    if not xlib.libx11_available():
        return True
    try:
        xlib.XDisplay(display).close()
    except OSError:
        return False
    return True


def _on_x11(platform: str) -> bool:
    return platform not in ("win32", "darwin", "cygwin")


class PynputOutput(OutputBase):
    """``pynput.keyboard.Controller().type``, after the user's modifiers are up."""

    name = OutputMethod.PYNPUT

    def problem(self) -> str | None:
        if _on_x11(self.platform):
            reason = self._x11_problem()
            if reason:
                return reason
        try:
            load_keyboard()
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] == "pynput":
                return "pynput is not installed: pip install pynput"
            return f"pynput cannot start: {exc}"
        except Exception as exc:  # pynput raises whatever its backend raised
            return f"pynput cannot start: {first_line(exc)[:200]}"
        if self.platform == "darwin" and not modifiers.macos_trusted():
            return (
                "macOS does not let Voxtray type: allow it in System Settings > "
                "Privacy & Security > Accessibility"
            )
        return None

    def _x11_problem(self) -> str | None:
        display = self.session.x11_display
        if not display:
            return "pynput types only through X11 here (DISPLAY is not set)"
        # pynput's own failure is a long repr of nested errors; this says it plainly.
        if not x_server_reachable(display):
            return f"pynput cannot reach the X server at DISPLAY={display}"
        return None

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        keyboard = load_keyboard()
        with _pynput_errors():
            if _on_x11(self.platform):
                return self._deliver_x11(keyboard, text, target)
            self._settle_native(keyboard)
            return self.type_chunks(text, target, keyboard.Controller().type)

    def press_paste(self, chord: PasteChord = PasteChord.CTRL_V) -> None:
        """Press ``chord`` once the user's modifiers are up."""
        self._require()
        keyboard = load_keyboard()
        *held, last = chord.split("+")
        with _pynput_errors():
            controller = self._settled_controller(keyboard)
            with contextlib.ExitStack() as stack:
                for name in held:
                    stack.enter_context(controller.pressed(getattr(keyboard.Key, name)))
                controller.tap(getattr(keyboard.Key, last) if last == "insert" else last)

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times once the user's modifiers are up."""
        check_key(name, count)
        self._require()
        keyboard = load_keyboard()
        with _pynput_errors():
            controller = self._settled_controller(keyboard)
            key = getattr(keyboard.Key, _PRESS_KEYS[name])
            for _ in range(count):
                controller.tap(key)
            _sync(controller)

    def _settled_controller(self, keyboard: ModuleType) -> Any:
        """A pynput Controller, once the user's held modifiers are up (they would turn
        the keys we press into shortcuts)."""
        if _on_x11(self.platform):
            with xlib.XDisplay(self.session.x11_display) as display:
                _settle_x11(display)
        else:
            self._settle_native(keyboard)
        return keyboard.Controller()

    def _settle_native(self, keyboard: ModuleType) -> None:
        probe = modifiers.system_probe(self.platform)
        held = modifiers.wait_until_released(probe) if probe else frozenset()
        controller = keyboard.Controller()
        for name in held:
            controller.release(getattr(keyboard.Key, _PYNPUT_KEYS[name]))

    def _deliver_x11(self, keyboard: ModuleType, text: str, target: FocusTarget) -> Delivery:
        display_name = self.session.x11_display
        with xlib.XDisplay(display_name) as display:
            _settle_x11(display)
            with binder.binder_for(display_name).session(display) as session:
                keysym_of = _keysym_function(keyboard)
                present = session.foreign_keysyms(2)
                keys = [None if xlib.is_control(char) else keysym_of(char) for char in text]
                keys = [None if key in present else key for key in keys]
                # A new controller reads the keyboard map with each segment's bindings.
                controllers: list[Any] = []
                cursor = binder.Cursor(
                    session,
                    keys,
                    lambda start, end, _bound: _type_synced(controllers[-1], text[start:end]),
                    on_bound=lambda: controllers.append(keyboard.Controller()),
                )
                return self.type_chunks(text, target, lambda piece: cursor.type_next(len(piece)))


def _type_synced(controller: Any, text: str) -> None:
    """Type, then wait until the X server has taken the key events (a round trip on
    pynput's own connection), so that a later keymap change cannot overtake them."""
    controller.type(text)
    _sync(controller)


def _sync(controller: Any) -> None:
    display = getattr(controller, "_display", None)  # pynput's Xlib display, if it has one
    if display is not None and hasattr(display, "sync"):
        display.sync()


def _settle_x11(display: xlib.XDisplay) -> None:
    """Wait for held modifiers; release through XTEST any still down after the wait."""
    keymap = display.keymap()
    if modifiers.wait_until_released(modifiers.x11_probe(display)):
        display.release_keys(set(xlib.held_modifier_keycodes(display, keymap)))


@contextlib.contextmanager
def _pynput_errors() -> Iterator[None]:
    try:
        yield
    except DeliveryError:
        raise
    except Exception as exc:  # pynput's exceptions share no base class
        raise DeliveryError(f"pynput failed: {first_line(exc)}") from exc


def _keysym_function(keyboard: ModuleType) -> Callable[[str], int | None]:
    """The keysym pynput looks up for a character, so that exactly that one gets bound.

    pynput prefers legacy keysyms (emdash, not U+2014); this asks its own converter and
    falls back to X's Unicode keysym if that private helper ever changes.
    """
    controller: Any = keyboard.Controller()

    def keysym_of(char: str) -> int | None:
        try:
            keysym = controller._key_to_keysym(keyboard.KeyCode.from_char(char))
        except Exception:  # a private helper: any failure means "use the fallback"
            keysym = None
        return int(keysym) if keysym else xlib.char_keysym(char)

    return keysym_of
