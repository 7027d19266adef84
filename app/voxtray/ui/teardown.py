"""Deleting Qt objects at a known moment, on the GUI thread.

Objects that refer to one another are freed by a garbage collection: at any later moment,
in whichever thread allocates, and in no set order. Qt crashes on a window deleted that
way (its layouts freed before their items, its timers stopped from another thread), so
the app deletes what it made itself once its event loop is over."""

from __future__ import annotations

from collections.abc import Sequence

import shiboken6
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget


def close_and_delete(windows: Sequence[QWidget | None], others: Sequence[QObject | None]) -> None:
    """Close the windows (their own threads end as they close), then delete the windows
    and the other objects, in the order given; ones already deleted are passed over."""
    for window in windows:
        if window is not None and shiboken6.isValid(window):
            window.close()
    for thing in [*windows, *others]:
        if thing is not None and shiboken6.isValid(thing):
            shiboken6.delete(thing)
