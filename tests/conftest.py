"""The suite's plugins: fixtures live in tests/support/, one module per concern."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

pytest_plugins = [
    "tests.support.chat_server",
    "tests.support.dictation_rig",
    "tests.support.fixtures",
    "tests.support.homes",
    "tests.support.http",
    "tests.support.pulse",
    "tests.support.qt_app",
    "tests.support.remote",
    "tests.support.store",
    "tests.support.x11",
]


# Speed is measured by benchmarks, not asserted by tests: hypothesis's per-example deadline
# would fail a property on a busy machine.
settings.register_profile("voxtray", deadline=None)
settings.load_profile("voxtray")


def pytest_configure(config: pytest.Config) -> None:
    # Widgets under test render offscreen; the end-to-end tests start their own X server.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
