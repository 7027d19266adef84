"""Global push-to-talk hotkeys (no Qt here).

One module per job: `keys` (hotkey strings), `modes` (push-to-talk), `base` (the backend
protocol and key tracking), one module per backend (`pynput_listener`, `keyboard_listener`,
`no_listener`), `chooser` (picks one at run time), `conflicts` (combinations already in
use). Names are loaded on first use, so importing this package imports no backend.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voxtray.hotkeys.base import HotkeyListener
    from voxtray.hotkeys.chooser import choose_backend
    from voxtray.hotkeys.conflicts import check_conflicts, x11_grab_conflict
    from voxtray.hotkeys.keyboard_listener import KeyboardBackend
    from voxtray.hotkeys.keys import Hotkey, parse_hotkey
    from voxtray.hotkeys.modes import TAP_THRESHOLD_S, PushToTalk
    from voxtray.hotkeys.no_listener import NoBackend
    from voxtray.hotkeys.pynput_listener import PynputBackend

_EXPORTS = {
    "HotkeyListener": "voxtray.hotkeys.base",
    "choose_backend": "voxtray.hotkeys.chooser",
    "check_conflicts": "voxtray.hotkeys.conflicts",
    "x11_grab_conflict": "voxtray.hotkeys.conflicts",
    "KeyboardBackend": "voxtray.hotkeys.keyboard_listener",
    "Hotkey": "voxtray.hotkeys.keys",
    "parse_hotkey": "voxtray.hotkeys.keys",
    "TAP_THRESHOLD_S": "voxtray.hotkeys.modes",
    "PushToTalk": "voxtray.hotkeys.modes",
    "NoBackend": "voxtray.hotkeys.no_listener",
    "PynputBackend": "voxtray.hotkeys.pynput_listener",
}

__all__ = [
    "TAP_THRESHOLD_S",
    "Hotkey",
    "HotkeyListener",
    "KeyboardBackend",
    "NoBackend",
    "PushToTalk",
    "PynputBackend",
    "check_conflicts",
    "choose_backend",
    "parse_hotkey",
    "x11_grab_conflict",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
