"""Make non-ASCII characters typable on X11 by binding them to spare keycodes first.

X11 key events carry keycodes, so a character absent from the keyboard map (é on a US
layout, Cyrillic, emoji) must first be bound to some keycode. xdotool and pynput do that
one character at a time: bind, press, unbind. The focused application reads the new map
only when it gets round to the MappingNotify event, by which time the binding may already
be undone, so at full speed it types the wrong character or none (measured on Xvfb with Qt:
"Grüße" came out as "Gre" at xdotool's ``--delay 0``; 12 ms per key was needed).

Here the characters a text needs are bound once, before typing, to the keycodes that have
no symbols (two characters each: plain and with Shift), and the tool then finds them in
the map and types at full speed. Key events travel after the MappingNotify in every
client's queue, so a fresh binding is seen in time; only *changing* a binding the
application may not have read yet is racy, so changes are spaced ``SETTLE_S`` apart. A text
needing more characters than there are spare keycodes (19 on the stock evdev map, so 38
characters) is typed in segments. Bindings are kept between deliveries and cleared
``RESTORE_AFTER_S`` after the last one, and at exit, leaving the map as it was.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from voxtray.desktop import xlib
from voxtray.desktop.xlib import Keymap, KeySym

log = logging.getLogger(__name__)

SETTLE_S = 0.15
"""Least time between two changes of a binding, for applications to read the first."""

RESTORE_AFTER_S = 2.0
"""Idle time after which the borrowed keycodes are cleared again."""


def pack(keysyms: Iterable[KeySym]) -> list[tuple[KeySym, KeySym]]:
    """Pair keysyms two to a keycode, a lower-case letter with its capital where both occur."""
    wanted = list(dict.fromkeys(keysyms))
    present = set(wanted)
    taken: set[KeySym] = set()
    pairs: list[tuple[KeySym, KeySym]] = []
    singles: list[KeySym] = []
    for sym in wanted:
        if sym in taken:
            continue
        taken.add(sym)
        partner = _case_partner(sym)
        if partner is not None and partner in present and partner not in taken:
            taken.add(partner)
            pairs.append(_lower_first(sym, partner))
        else:
            singles.append(sym)
    pairs.extend((a, b) for a, b in zip(singles[0::2], singles[1::2], strict=False))
    if len(singles) % 2:
        pairs.append((singles[-1], 0))
    return pairs


def _case_partner(sym: KeySym) -> KeySym | None:
    char = xlib.keysym_char(sym)
    if char is None:
        return None
    other = char.upper() if char.islower() else char.lower()
    if len(other) != 1 or other == char:
        return None
    return xlib.char_keysym(other)


def _lower_first(a: KeySym, b: KeySym) -> tuple[KeySym, KeySym]:
    char = xlib.keysym_char(a)
    return (a, b) if char is not None and char.islower() else (b, a)


def plan_segments(
    keys: Sequence[KeySym | None], capacity: int
) -> list[tuple[int, int, list[KeySym]]]:
    """Cut a text into runs that each need at most ``capacity`` distinct bound keysyms.

    Args:
        keys: Per character, the keysym to bind, or None for characters already typable.
        capacity: How many keysyms can be bound at once.

    Returns:
        ``(start, end, keysyms)`` for each run; one run when capacity is below one.
    """
    if capacity < 1:
        return [(0, len(keys), list(dict.fromkeys(k for k in keys if k is not None)))]
    runs: list[tuple[int, int, list[KeySym]]] = []
    start = 0
    needed: dict[KeySym, None] = {}
    for index, key in enumerate(keys):
        if key is None or key in needed:
            continue
        if len(needed) == capacity:
            runs.append((start, index, list(needed)))
            start, needed = index, {}
        needed[key] = None
    runs.append((start, len(keys), list(needed)))
    return runs


@dataclass
class Segment:
    """A run of the text, and whether every character in it is now in the keyboard map."""

    start: int
    end: int
    bound: bool


class KeysymBinder:
    """The keycodes borrowed on one X display, shared by every backend typing there."""

    def __init__(self, display_name: str) -> None:
        self.display_name = display_name
        self._lock = threading.Lock()
        self._ours: dict[int, tuple[KeySym, KeySym]] = {}
        self._last_change = 0.0
        self._timer: threading.Timer | None = None
        # Bumped by every delivery, so a timer that fired while one ran stands down.
        self._generation = 0

    @contextlib.contextmanager
    def session(self, display: xlib.XDisplay) -> Iterator[BindSession]:
        """Hold the keycodes for one delivery; clearing them is scheduled after it."""
        with self._lock:
            self._cancel_timer()
            self._generation += 1
            try:
                yield BindSession(self, display)
            finally:
                if self._ours:
                    self._timer = threading.Timer(
                        RESTORE_AFTER_S, self._restore_later, args=(self._generation,)
                    )
                    self._timer.daemon = True
                    self._timer.start()

    def release(self, timeout: float = 1.0) -> None:
        """Clear the borrowed keycodes now instead of after the idle time (at shutdown).

        A delivery still running on another thread after ``timeout`` keeps them.
        """
        if not self._lock.acquire(timeout=timeout):
            return
        try:
            self._cancel_timer()
            self._restore_quietly()
        finally:
            self._lock.release()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def owned(self) -> dict[int, tuple[KeySym, KeySym]]:
        return dict(self._ours)

    def _restore(self, display: xlib.XDisplay) -> None:
        # Only keycodes that still hold what we put there: anything else is not ours now.
        keymap = display.keymap()
        self._wait_settle()
        for keycode, pair in self._ours.items():
            if keymap.get(keycode, ())[:2] == pair:
                display.set_keysyms(keycode, (0, 0))
        display.sync()
        self._ours.clear()

    def _restore_later(self, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            self._timer = None
            self._restore_quietly()

    def _restore_quietly(self) -> None:
        if not self._ours:
            return
        try:
            with xlib.XDisplay(self.display_name) as display:
                self._restore(display)
        except OSError as exc:
            log.debug("cannot clear borrowed keycodes on %s: %s", self.display_name, exc)
            self._ours.clear()

    def _wait_settle(self) -> None:
        wait = self._last_change + SETTLE_S - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def _forget_changed(self, keymap: Keymap) -> None:
        # A keycode someone else rebound (a layout switch) is theirs again.
        self._ours = {
            code: pair for code, pair in self._ours.items() if keymap.get(code, ())[:2] == pair
        }

    def _bind(self, display: xlib.XDisplay, keymap: Keymap, wanted: Sequence[KeySym]) -> bool:
        bound = {sym for pair in self._ours.values() for sym in pair if sym}
        missing = [sym for sym in wanted if sym not in bound]
        if not missing:
            return True
        free = [code for code, syms in keymap.items() if not any(syms) and code not in self._ours]
        keep = {code for code, pair in self._ours.items() if set(pair) & set(wanted)}
        slots = [code for code in self._ours if code not in keep] + free
        pairs = pack(missing)
        if len(pairs) > len(slots):
            # Repack everything this segment needs across every keycode we may use.
            slots, pairs = list(self._ours) + free, pack(wanted)
            if len(pairs) > len(slots):
                return False
        used = slots[: len(pairs)]
        if any(code in self._ours for code in used):
            # Filling an empty keycode cannot confuse an application still reading the
            # previous map; overwriting one that it may not have read yet can.
            self._wait_settle()
        for code, pair in zip(used, pairs, strict=True):
            display.set_keysyms(code, pair)
        display.sync()
        fresh = display.keymap()
        for code in used:
            syms = fresh.get(code, ())
            self._ours[code] = (syms[0] if syms else 0, syms[1] if len(syms) > 1 else 0)
        self._last_change = time.monotonic()
        return True


class BindSession:
    """One delivery's view of the keyboard map, from ``KeysymBinder.session``."""

    def __init__(self, binder: KeysymBinder, display: xlib.XDisplay) -> None:
        self._binder = binder
        self._display = display
        self.keymap = display.keymap()
        binder._forget_changed(self.keymap)

    def foreign_keysyms(self, levels: int | None = None) -> set[KeySym]:
        """Keysyms the user's own layout offers (not our bindings), first ``levels`` each."""
        ours = self._binder.owned()
        return {
            sym
            for code, syms in self.keymap.items()
            if code not in ours
            for sym in syms[:levels]
            if sym
        }

    def typed(self) -> None:
        """Note that keys using the current bindings were just sent."""
        self._binder._last_change = time.monotonic()

    def capacity(self) -> int:
        ours = self._binder.owned()
        free = sum(1 for code, syms in self.keymap.items() if not any(syms) and code not in ours)
        return 2 * (free + len(ours))

    def segments(self, keys: Sequence[KeySym | None]) -> Iterator[Segment]:
        """Bind what each run of the text needs, then hand the run over for typing.

        Args:
            keys: Per character, the keysym to bind, or None for characters already typable.
        """
        for start, end, wanted in plan_segments(keys, self.capacity()):
            keymap = self._display.keymap() if start else self.keymap
            bound = self._binder._bind(self._display, keymap, wanted)
            yield Segment(start, end, bound)


class Cursor:
    """Types a text piece after piece, each run bound as the typing reaches it.

    Keys typed are noted, so that a binding is changed only ``SETTLE_S`` after the last key
    that used it: applications may read key events and keymap changes out of order.

    Args:
        session: The delivery's binding session.
        keys: Per character, the keysym to bind, or None for characters already typable.
        type_run: Types ``text[start:end]``, told whether its characters are bound.
        on_bound: Called once each segment's characters are bound, before it is typed.
    """

    def __init__(
        self,
        session: BindSession,
        keys: Sequence[KeySym | None],
        type_run: Callable[[int, int, bool], None],
        on_bound: Callable[[], None] | None = None,
    ) -> None:
        self._session = session
        self._segments = session.segments(keys)
        self._type_run = type_run
        self._on_bound = on_bound
        self._segment: Segment | None = None
        self.position = 0

    def type_next(self, length: int) -> None:
        """Type the next ``length`` characters, across segment boundaries."""
        end = self.position + length
        while self.position < end:
            while self._segment is None or self.position >= self._segment.end:
                self._segment = next(self._segments)
                if self._on_bound is not None:
                    self._on_bound()
            stop = min(end, self._segment.end)
            try:
                self._type_run(self.position, stop, self._segment.bound)
            finally:
                self._session.typed()
            self.position = stop


_binders: dict[str, KeysymBinder] = {}
_binders_lock = threading.Lock()


def binder_for(display_name: str) -> KeysymBinder:
    """The process-wide binder for an X display."""
    with _binders_lock:
        binder = _binders.get(display_name)
        if binder is None:
            binder = _binders[display_name] = KeysymBinder(display_name)
        return binder


@atexit.register
def _release_all() -> None:
    with _binders_lock:
        binders = list(_binders.values())
    for binder in binders:
        binder.release()
