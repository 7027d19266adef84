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
    from app.hotkeys.base import HotkeyListener
    from app.hotkeys.chooser import choose_backend
    from app.hotkeys.conflicts import check_conflicts, x11_grab_conflict
    from app.hotkeys.keyboard_listener import KeyboardBackend
    from app.hotkeys.keys import Hotkey, parse_hotkey
    from app.hotkeys.modes import TAP_THRESHOLD_S, PushToTalk
    from app.hotkeys.no_listener import NoBackend
    from app.hotkeys.pynput_listener import PynputBackend

_EXPORTS = {
    "HotkeyListener": "app.hotkeys.base",
    "choose_backend": "app.hotkeys.chooser",
    "check_conflicts": "app.hotkeys.conflicts",
    "x11_grab_conflict": "app.hotkeys.conflicts",
    "KeyboardBackend": "app.hotkeys.keyboard_listener",
    "Hotkey": "app.hotkeys.keys",
    "parse_hotkey": "app.hotkeys.keys",
    "TAP_THRESHOLD_S": "app.hotkeys.modes",
    "PushToTalk": "app.hotkeys.modes",
    "NoBackend": "app.hotkeys.no_listener",
    "PynputBackend": "app.hotkeys.pynput_listener",
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
