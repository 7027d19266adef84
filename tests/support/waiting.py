"""The waits: poll a condition until it holds or the time is up (`wait_for`), see that it
keeps holding (`steady`), or read a window until its text stops changing."""

from __future__ import annotations

import contextlib
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


def wait_for_text(
    read: Callable[[], str], expected: str, timeout: float = 10.0, every: float = 0.05
) -> str:
    """What ``read()`` returns once it is ``expected``, or when the time is up; the caller
    compares, so that a failure shows what arrived."""
    with contextlib.suppress(AssertionError):
        wait_for(lambda: read() == expected, timeout, every=every)
    return read()


def steady(check: Callable[[], bool], seconds: float = 0.5) -> bool:
    """Whether ``check`` holds throughout ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not check():
            return False
        time.sleep(0.02)
    return check()


def settled_text(read: Callable[[], str], timeout: float = 20.0, quiet_s: float = 0.5) -> str:
    """What a window shows once something was typed and it stopped changing for `quiet_s`."""
    wait_for(lambda: read().strip() != "", timeout, "nothing was typed into the window")
    return quiet_text(read, timeout, quiet_s)


def quiet_text(read: Callable[[], str], timeout: float = 10.0, quiet_s: float = 0.5) -> str:
    """What ``read()`` returns once it has some text and stops changing for `quiet_s`, or
    what it returns when the time is up (nothing, where nothing was typed)."""
    deadline = time.monotonic() + timeout
    last, since = read(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = read()
        if now != last:
            last, since = now, time.monotonic()
        elif now and time.monotonic() - since >= quiet_s:
            break
    return last
