"""What every hotkey backend offers, and the key tracking they share.

A backend calls its `on_press`/`on_release` callables on its own listener thread; the Qt
layer marshals them to the GUI thread before touching widgets. A backend is cheap to
construct and never fails doing so: `available()` says whether it can work here and why.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol, runtime_checkable

from voxtray.choices import HotkeyBackend
from voxtray.desktop.session import DesktopSession
from voxtray.hotkeys.keys import KINDS, MODIFIERS, Hotkey, kind

log = logging.getLogger(__name__)

Callback = Callable[[], None]


class HotkeyListener(Protocol):
    """Watches the keyboard for one hotkey and reports its press and release."""

    name: HotkeyBackend

    def available(self) -> tuple[bool, str]:
        """Whether the backend can work here, and why (never raises)."""
        ...

    def start(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        """Start listening; a running backend is restarted with the new hotkey.

        `on_press` runs once when the whole combination becomes held; `on_release` once
        when any of its keys is released. Both run on the backend's own thread.
        """
        ...

    def stop(self) -> None:
        """Stop listening; no callback runs after this returns."""
        ...


@dataclass(frozen=True)
class Binding:
    """How a desktop that binds the key itself holds it now."""

    bound: bool
    trigger: str
    """How the desktop describes the key it bound ("Press <Control><Alt>space")."""
    problem: str | None
    """Why the key is not bound, once binding failed; None while bound or asking."""
    binds: int
    """How many times the key was bound: once at start, again after each portal restart."""

    def fields(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@runtime_checkable
class DesktopBound(Protocol):
    """A backend whose key the desktop binds (the GlobalShortcuts portal)."""

    def binding(self) -> Binding: ...


def hotkey_fields(listener: HotkeyListener | None) -> dict[str, object]:
    """What `voxtray status` shows of the hotkey: its backend, and the desktop's binding
    where the desktop binds it."""
    if listener is None:
        return {"backend": "none"}
    fields: dict[str, object] = {"backend": str(listener.name)}
    if isinstance(listener, DesktopBound):
        fields.update(listener.binding().fields())
    return fields


class ListenerBase:
    """The session a backend judges: built from `env` and `platform`, never `os.environ`.

    Args:
        env: The environment to judge; `os.environ` if None.
        platform: `sys.platform` if None.
    """

    def __init__(self, env: Mapping[str, str] | None = None, platform: str | None = None) -> None:
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.platform = sys.platform if platform is None else platform
        self.session = DesktopSession.from_env(self.env, self.platform)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {getattr(self, 'name', '')!r}>"


def import_untyped(module: str) -> ModuleType:
    """Import a package on use: importing pynput opens an X connection, which must not
    happen when this package is imported (and these packages have no type stubs)."""
    return importlib.import_module(module)


class ComboTracker:
    """Turns key-down/key-up events into one press and one release of a hotkey.

    The combination is pressed when all its keys are down and the modifier kinds held are
    exactly the hotkey's (so ctrl+shift+h does not fire ctrl+h). Sides are told apart only
    where the hotkey names one, as XGrabKey does. Auto-repeat arrives as more key-downs of
    a key already down, which change nothing while the combination is pressed. Releasing
    any key of the combination releases it.
    """

    def __init__(self, hotkey: Hotkey, on_press: Callback, on_release: Callback) -> None:
        self._parts = hotkey.parts
        self._kinds = frozenset(kind(name) for name in self._parts if name in MODIFIERS)
        self._on_press = on_press
        self._on_release = on_release
        self._held: set[str] = set()
        self._active = False
        self._closed = False
        self._lock = threading.Lock()

    def key_down(self, name: str | None) -> None:
        """A key went down (None: a key without a name here, ignored)."""
        if name is None:
            return
        with self._lock:
            if self._closed:
                return
            # Not ignored when already down: a key whose release was missed (e.g. behind
            # Windows' secure desktop) must not block the hotkey for good.
            self._held.add(name)
            fire = not self._active and self._matches()
            self._active = self._active or fire
        if fire:
            self._call(self._on_press)

    def key_up(self, name: str | None) -> None:
        """A key came up (None: a key without a name here, ignored)."""
        if name is None:
            return
        with self._lock:
            if name not in self._held or self._closed:
                return
            self._held.discard(name)
            fire = self._active and not self._all_held()
            self._active = self._active and not fire
        if fire:
            self._call(self._on_release)

    def close(self) -> None:
        """Report nothing from now on."""
        with self._lock:
            self._closed = True

    def _all_held(self) -> bool:
        return all(self._is_held(part) for part in self._parts)

    def _is_held(self, part: str) -> bool:
        if part in KINDS:
            return bool({part, f"left_{part}", f"right_{part}"} & self._held)
        return part in self._held

    def _matches(self) -> bool:
        held_kinds = {kind(name) for name in self._held if name in MODIFIERS}
        return held_kinds == self._kinds and self._all_held()

    @staticmethod
    def _call(callback: Callback) -> None:
        # An exception escaping into pynput would stop its listener for good.
        try:
            callback()
        except Exception:
            log.exception("hotkey callback failed")
