"""The tray app in this process for pytest-qt tests: loaded on the shared store with a fake
microphone replaying a real clip, and a guard that fails any widget call made off the GUI
thread."""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import shiboken6
from PySide6.QtCore import QThread
from PySide6.QtWidgets import QApplication

from tests.support.models import ensure_installed
from tests.support.outputs import RecordingOutput
from tests.support.sounddevice import FakeSoundDevice
from voxtray.config import Settings, SettingsStore
from voxtray.history.store import History
from voxtray.models.store import ModelStore


@pytest.fixture(autouse=True)
def no_windows_left() -> Iterator[None]:
    """Delete the windows a test left open, here on the GUI thread once it ends: left as
    garbage, a collection deletes them at any later moment, in whatever thread allocates,
    and Qt crashes on a window deleted that way."""
    yield
    if QApplication.instance() is None:
        return
    for widget in QApplication.topLevelWidgets():
        if (
            shiboken6.isValid(widget)
            and widget.parent() is None
            and shiboken6.createdByPython(widget)
        ):
            widget.close()
            shiboken6.delete(widget)


@pytest.fixture
def installed_store(model_store: ModelStore) -> ModelStore:
    for name in model_store.catalog.defaults:
        ensure_installed(model_store, name)
    return model_store


class GuiThreadGuard:
    """Wraps widget-touching methods so a call off the GUI thread is caught, not run."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.calls: Counter[str] = Counter()
        self.notes: list[str] = []  # the messages Tray.notify was given

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from voxtray.ui.hud import Hud
        from voxtray.ui.selftest_dialog import SelfTestDialog
        from voxtray.ui.tray import Tray, TrayMenu

        for cls, name in (
            (Tray, "set_state"),
            (Tray, "notify"),
            (Tray, "bring_forward"),
            (TrayMenu, "set_recent"),
            (Hud, "set_state"),
            (Hud, "set_engine"),
            (Hud, "show_utterance"),
            (SelfTestDialog, "say"),
        ):
            monkeypatch.setattr(
                cls, name, self._checked(f"{cls.__name__}.{name}", getattr(cls, name))
            )

    def _checked(self, label: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def checked(widget: object, *args: Any, **kwargs: Any) -> Any:
            self.calls[label] += 1
            if label == "Tray.notify":
                self.notes.append(args[1])
            app = QApplication.instance()
            if app is None or QThread.currentThread() is not app.thread():
                thread = QThread.currentThread().objectName() or threading.current_thread().name
                self.violations.append(f"{label} ran in thread {thread}")
                return None
            return method(widget, *args, **kwargs)

        return checked


@pytest.fixture
def gui_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[GuiThreadGuard]:
    guard = GuiThreadGuard()
    guard.install(monkeypatch)
    yield guard
    assert guard.violations == []


@pytest.fixture
def voxtray(
    qtbot: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    installed_store: ModelStore,
    gui_guard: GuiThreadGuard,
) -> Any:
    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path))
    app = loaded_app(qtbot, installed_store, tmp_path)
    app.guard = gui_guard
    yield app
    dispose_app(app)


def loaded_app(qtbot: Any, store: ModelStore, folder: Path) -> Any:
    """A returning user's app (no set-up window), once its model has loaded."""
    SettingsStore(folder / "settings.json").save(Settings(first_run_done=True))
    app = built_app(store, folder)
    with qtbot.waitSignal(app.worker.loaded, timeout=120_000):
        pass
    return app


def built_app(store: ModelStore, folder: Path) -> Any:
    """The app on `folder`'s settings and history, its microphone a fake replaying silence
    (`app.fake`), its typed text recorded (`app.output`); not yet loaded."""
    from voxtray.ui.app import VoxtrayApp

    fake = FakeSoundDevice(np.zeros(16000 * 30, np.float32), speed=4.0)
    output = RecordingOutput()
    app = VoxtrayApp(
        store,
        SettingsStore(folder / "settings.json"),
        History(folder / "history.sqlite3"),
        sd_module=fake,
        output_factory=lambda name: output,
        use_hotkeys=False,
    )
    app.fake, app.output = fake, output
    return app


def dispose_app(app: Any) -> None:
    """Quit and dispose of the app the way `run_app` does when its event loop ends."""
    app.quit()
    app.dispose()
