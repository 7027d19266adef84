"""The suite's plugins: fixtures live in tests/support/, one module per concern."""

from __future__ import annotations

import os

import pytest

pytest_plugins = [
    "tests.support.fixtures",
    "tests.support.homes",
    "tests.support.http",
    "tests.support.pulse",
    "tests.support.qt_app",
    "tests.support.remote",
    "tests.support.store",
    "tests.support.x11",
]


def pytest_configure(config: pytest.Config) -> None:
    # Widgets under test render offscreen; the end-to-end tests start their own X server.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
