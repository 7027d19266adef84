"""Text delivery: type or paste the recognised words into the focused window (no Qt here).

`base` holds the protocols and shared plumbing, `target` the window text is meant for,
`delivery` the chunked typing and its `Delivery` result, `selection`/`clipboard_note`/`tools` the
clipboard, its crash journal and helper processes; one module per backend (`xdotool`,
`pynput_typer`, `keyboard_typer`, `wtype`, `ydotool`, `clipboard`), and `chooser` picks
one at run time and wires them together. Names are loaded on first use, so importing this
package (or `voxtray.output.base`) imports no backend.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voxtray.output.base import DeliveryError, KeyPresser, PasteKeys, TextOutput
    from voxtray.output.chooser import OUTPUT_CHOICES, choose_output, create_output
    from voxtray.output.delivery import Delivery
    from voxtray.output.target import FocusTarget

_EXPORTS = {
    "Delivery": "voxtray.output.delivery",
    "FocusTarget": "voxtray.output.target",
    "DeliveryError": "voxtray.output.base",
    "KeyPresser": "voxtray.output.base",
    "PasteKeys": "voxtray.output.base",
    "TextOutput": "voxtray.output.base",
    "OUTPUT_CHOICES": "voxtray.output.chooser",
    "choose_output": "voxtray.output.chooser",
    "create_output": "voxtray.output.chooser",
}

__all__ = [
    "OUTPUT_CHOICES",
    "Delivery",
    "DeliveryError",
    "FocusTarget",
    "KeyPresser",
    "PasteKeys",
    "TextOutput",
    "choose_output",
    "create_output",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
