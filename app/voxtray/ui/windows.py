"""The app's windows: at most one of each kind, an open one raised instead of a second
opened, and all of them, with the app's other Qt objects, deleted in order at the end.

Objects that refer to one another are freed by a garbage collection: at any later moment,
in whichever thread allocates, and in no set order. Qt crashes on a window deleted that
way (its layouts freed before their items, its timers stopped from another thread), so
the app deletes what it made itself once its event loop is over (`dispose`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import shiboken6
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

W = TypeVar("W", bound=QWidget)


def bring_up(window: QWidget | None) -> bool:
    """Raise the window if it is open; False when there is none to raise."""
    if window is None or not shiboken6.isValid(window) or not window.isVisible():
        return False
    window.showNormal()
    window.raise_()
    window.activateWindow()
    return True


class Windows:
    """The windows the app opened, one per kind (class)."""

    def __init__(self) -> None:
        self._kept: dict[type[QWidget], QWidget] = {}

    def find(self, kind: type[W]) -> W | None:
        """The window of `kind` the app made last, open or closed; None when there is none."""
        window = self._kept.get(kind)
        if window is None or not shiboken6.isValid(window):
            return None
        assert isinstance(window, kind)
        return window

    def showing(self, kind: type[W]) -> W | None:
        """The window of `kind` when it is open."""
        window = self.find(kind)
        return window if window is not None and window.isVisible() else None

    def raise_open(self, kind: type[QWidget]) -> bool:
        """Raise the open window of `kind`; False when none is open."""
        return bring_up(self.find(kind))

    def open(self, kind: type[W], make: Callable[[], W]) -> W:
        """The open window of `kind`, raised, or a new one from `make`, shown."""
        window = self.find(kind)
        if window is not None and bring_up(window):
            return window
        return self.show(kind, make())

    def show(self, kind: type[W], window: W) -> W:
        """Show `window` as the app's one of `kind`; a closed one it replaces is deleted."""
        previous = self._kept.get(kind)
        self._kept[kind] = window
        if previous is not None and previous is not window and shiboken6.isValid(previous):
            previous.close()
            previous.deleteLater()
        window.show()
        return window

    def close(self, kind: type[QWidget]) -> None:
        """Close the window of `kind` and delete it."""
        window = self._kept.pop(kind, None)
        if window is not None and shiboken6.isValid(window):
            window.close()
            window.deleteLater()

    def dispose(self, others: Sequence[QObject | None]) -> None:
        """Close every window (their own threads end as they close), then delete the
        windows and `others`, in that order, on this (the GUI) thread; ones already deleted
        are passed over. For when the event loop is over."""
        windows = list(self._kept.values())
        self._kept.clear()
        for window in windows:
            if shiboken6.isValid(window):
                window.close()
        for thing in [*windows, *others]:
            if thing is not None and shiboken6.isValid(thing):
                shiboken6.delete(thing)
