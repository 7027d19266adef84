"""The one wait helper: poll a condition until it holds or the time is up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T],
    timeout: float = 30.0,
    message: str | Callable[[], str] = "timed out",
    every: float = 0.05,
) -> T:
    """The condition's first truthy value; an AssertionError with `message` (or what
    `message()` says then) when `timeout` seconds pass without one."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(message() if callable(message) else message)
        time.sleep(every)


def settled_text(read: Callable[[], str], timeout: float = 20.0, quiet_s: float = 0.5) -> str:
    """What a window shows once something was typed and it stopped changing for `quiet_s`."""
    wait_for(lambda: read().strip() != "", timeout, "nothing was typed into the window")
    last = ""
    while read() != last:
        last = read()
        time.sleep(quiet_s)
    return last
