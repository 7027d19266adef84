"""Type through the ``keyboard`` package: Windows, and Linux as root with /dev/uinput.

On Linux the package needs root, a writable /dev/uinput and ``dumpkeys`` (from kbd) to
build its key table; each is checked without touching a device, so ``available()`` is
safe to call anywhere.
"""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType

from voxtray.choices import OutputMethod
from voxtray.errors import first_line
from voxtray.output import modifiers
from voxtray.output.base import Delivery, DeliveryError, FocusTarget, OutputBase, check_key

# The keyboard package's names for the keys `press_key` takes.
_PRESS_KEYS = {
    "BackSpace": "backspace",
    "Return": "enter",
    "Tab": "tab",
    "Escape": "esc",
    "Delete": "delete",
}


def load_keyboard() -> ModuleType:
    return importlib.import_module("keyboard")


class KeyboardOutput(OutputBase):
    """``keyboard.write(text)``, which releases held keys first and restores them after."""

    name = OutputMethod.KEYBOARD

    def problem(self) -> str | None:
        if self.platform.startswith("linux"):
            reason = self._linux_problem()
            if reason:
                return reason
        elif self.platform != "win32":
            return "the keyboard package types only on Windows and Linux"
        try:
            load_keyboard()
        except ModuleNotFoundError:
            return "the keyboard package is not installed: pip install keyboard"
        except Exception as exc:  # ImportError or OSError from its platform backend
            return f"the keyboard package cannot start: {first_line(exc)}"
        return None

    def _linux_problem(self) -> str | None:
        if os.geteuid() != 0:
            return "the keyboard package types on Linux only as root: choose xdotool or ydotool"
        if not os.access("/dev/uinput", os.W_OK):
            return "/dev/uinput is missing or not writable: sudo modprobe uinput"
        if shutil.which("dumpkeys", path=self.env.get("PATH")) is None:
            return "dumpkeys not found (the keyboard package needs it): sudo apt-get install kbd"
        return None

    def _deliver(self, text: str, target: FocusTarget) -> Delivery:
        keyboard = load_keyboard()
        probe = modifiers.system_probe(self.platform)
        if probe is not None:
            modifiers.wait_until_released(probe)

        def write(piece: str) -> None:
            try:
                keyboard.write(piece, delay=0)
            except Exception as exc:  # the package raises bare ImportError/OSError/ValueError
                raise DeliveryError(f"keyboard failed: {first_line(exc)}") from exc

        return self.type_chunks(text, target, write)

    def press_key(self, name: str, count: int = 1) -> None:
        """Press ``name`` ``count`` times once the user's modifiers are up."""
        check_key(name, count)
        self._require()
        keyboard = load_keyboard()
        probe = modifiers.system_probe(self.platform)
        if probe is not None:
            modifiers.wait_until_released(probe)
        try:
            for _ in range(count):
                keyboard.send(_PRESS_KEYS[name])
        except Exception as exc:  # the package raises bare ImportError/OSError/ValueError
            raise DeliveryError(f"keyboard failed: {first_line(exc)}") from exc
