"""How long the desktop takes to tell Voxtray the hotkey went down and up, through the
GlobalShortcuts portal on GNOME 48: ``python -m tools.measure.portal_hotkey [--presses N]``.

GNOME Shell 48 runs headless in its Debian 13 root (`tests.support.gnome_root`); Voxtray's
portal hotkey backend binds ctrl+alt+space (GNOME's dialog answered once through the
accessibility bus), and the key is pressed and released through mutter's own keyboard, the
path a physical key takes. The time runs from sending the space key's event (the one that
completes or breaks the combination) to the backend's callback.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.gnome_root import GnomeDesktop, gnome_desktop
from tests.support.portal_desktop import compositor_keyboard
from tests.support.waiting import wait_for
from voxtray.hotkeys.keys import parse_hotkey
from voxtray.hotkeys.portal_listener import PortalShortcutBackend

MODIFIERS = (0xFFE3, 0xFFE9)  # Control_L, Alt_L
SPACE = 0x20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.measure.portal_hotkey")
    parser.add_argument("--presses", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="voxtray-hotkey-") as tmp:
        where = Path(tmp)
        (where / "share").mkdir()
        with gnome_desktop(where, where / "share") as gnome:
            down, up = _measure(gnome, args.presses)
    for name, ms in (("down -> Activated", down), ("up -> Deactivated", up)):
        spread = f"{min(ms):.1f}-{max(ms):.1f}"
        print(f"GNOME 48, {name}: median {statistics.median(ms):.1f} ms ({spread}, n={len(ms)})")
    return 0


def _measure(gnome: GnomeDesktop, presses: int) -> tuple[list[float], list[float]]:
    heard: list[float] = []
    event = threading.Event()

    def note() -> None:
        heard.append(time.perf_counter())
        event.set()

    env = gnome.client_env()
    answering = gnome.answer_shortcut_dialog("Add")
    backend = PortalShortcutBackend(env, "linux")
    backend.start(parse_hotkey("ctrl+alt+space"), note, note)
    try:
        answering.join(90)
        wait_for(lambda: backend.binding().bound, 60, lambda: f"not bound: {backend.binding()}")
        gnome.leave_overview()
        down: list[float] = []
        up: list[float] = []
        with compositor_keyboard(env) as send:
            for _ in range(presses):
                for key in MODIFIERS:
                    send(key, True)
                down.append(_timed(lambda: send(SPACE, True), event, heard))
                up.append(_timed(lambda: send(SPACE, False), event, heard))
                for key in reversed(MODIFIERS):
                    send(key, False)
                time.sleep(0.3)
        return down, up
    finally:
        backend.stop()


def _timed(act: Callable[[], None], event: threading.Event, heard: list[float]) -> float:
    """Milliseconds from just before `act` to the callback it brings."""
    event.clear()
    started = time.perf_counter()
    act()
    if not event.wait(5):
        raise RuntimeError("the desktop never told Voxtray of the key")
    return (heard[-1] - started) * 1000


if __name__ == "__main__":
    raise SystemExit(main())
