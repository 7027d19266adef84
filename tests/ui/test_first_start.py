"""The app's first start, in this process: the set-up window opens by itself and not again
once closed, and the first model install shows a real progress bar. The install is real: a
generated sherpa-onnx model served over HTTP from this machine into a real store, with the
real voice detector."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.models import ensure_installed
from tests.support.qt_app import built_app, dispose_app
from tests.support.store import NAME, Fake, sha
from voxtray.config import SettingsStore
from voxtray.models.catalog import catalog_path, load_catalog
from voxtray.models.progress import InstallProgress, InstallStep
from voxtray.models.store import ModelStore
from voxtray.ui.download_window import DownloadProgress, DownloadWindow
from voxtray.ui.first_run import FirstRunWindow

VAD = "silero-vad-v6"
Shown = list[tuple[str, InstallProgress]]  # the window showing it, what it showed


@pytest.fixture
def uninstalled(fake: Fake, model_store: ModelStore, tmp_path: Path) -> ModelStore:
    """A store with the real voice detector installed and the speech model still to fetch.
    Its archive is pinned in the catalog: the app installs only pinned models unasked."""
    catalog = json.loads(fake.catalog_path.read_text())
    [entry] = catalog["models"]
    entry["source"].update(sha256=sha(fake.archive), size=len(fake.archive))
    shipped = json.loads(catalog_path().read_text())
    catalog["models"].append(next(m for m in shipped["models"] if m["name"] == VAD))
    catalog["defaults"]["vad"] = VAD
    path = tmp_path / "first-catalog.json"
    path.write_text(json.dumps(catalog))
    root = tmp_path / "first-models"
    root.mkdir()
    (root / VAD).symlink_to(ensure_installed(model_store, VAD).path, target_is_directory=True)
    return ModelStore(root, load_catalog(path))


@pytest.fixture
def progress_shown(monkeypatch: pytest.MonkeyPatch) -> Shown:
    shown: Shown = []
    original = DownloadProgress.show_progress

    def spy(self: DownloadProgress, progress: InstallProgress) -> None:
        shown.append((type(self.window()).__name__, progress))
        original(self, progress)

    monkeypatch.setattr(DownloadProgress, "show_progress", spy)
    return shown


def start(store: ModelStore, home: Path, **settings: Any) -> Any:
    """The app on `home`, with `settings` saved over what is there first."""
    settings_store = SettingsStore(home / "settings.json")
    if settings:
        settings_store.save(settings_store.load()[0].replace(**settings))
    return built_app(store, home)


def wait_loaded(qtbot: Any, app: Any, ready: Callable[[], bool]) -> None:
    qtbot.waitUntil(lambda: ready() and app.worker.dictation.in_use() is not None, timeout=120_000)


def test_progress_bar_in_percent_speed_and_time_left(qtbot: Any) -> None:
    shown = DownloadWindow("whisper-base")
    qtbot.addWidget(shown)
    shown.show()
    bar = shown.progress
    total = 3_000_000_000  # over int32: no overflow
    bar.show_progress(InstallProgress(InstallStep.DOWNLOADING, "model.onnx", 0, total))
    bar._rate.began -= 10  # ten seconds in
    bar.show_progress(InstallProgress(InstallStep.DOWNLOADING, "model.onnx", total // 2, total))
    assert bar.bar.value() == 500
    assert bar.stage.text() == "Downloading model.onnx"
    assert bar.rate.text() == "150.0 MB/s · about 10 s left"
    bar.show_progress(InstallProgress(InstallStep.CONVERTING, "building encoder", 1, 4))
    assert bar.stage.text() == "Converting: building encoder"
    assert bar.rate.text() == ""
    assert "whisper-base" in shown.findChild(type(bar.stage)).text()
    assert InstallProgress(InstallStep.UNPACKING).installing
    assert not InstallProgress(InstallStep.WARMING_UP).installing


def test_first_install_shows_a_progress_window_that_closes_when_ready(
    qtbot: Any, uninstalled: ModelStore, tmp_path: Path, progress_shown: Shown
) -> None:
    app = start(uninstalled, tmp_path, model=NAME, engine="sherpa", first_run_done=True)
    try:
        wait_loaded(qtbot, app, lambda: uninstalled.get(NAME) is not None)
        qtbot.waitUntil(lambda: app.windows.find(DownloadWindow) is None, timeout=10_000)
        assert app.windows.find(FirstRunWindow) is None  # a returning user: no set-up window
        downloads = [p for _, p in progress_shown if p.step is InstallStep.DOWNLOADING]
        assert downloads, progress_shown
        assert {window for window, _ in progress_shown} == {"DownloadWindow"}
        last = downloads[-1]
        assert last.total is not None
        assert last.done == last.total > 0  # the bar reached its end
    finally:
        dispose_app(app)


def test_first_start_opens_set_up_with_the_install_in_it_and_not_again(
    qtbot: Any, uninstalled: ModelStore, tmp_path: Path, progress_shown: Shown
) -> None:
    settings_store = SettingsStore(tmp_path / "settings.json")
    first = {"model": NAME, "engine": "sherpa"}  # the catalog's model; first_run_done unset
    app = start(uninstalled, tmp_path, **first)
    try:
        qtbot.waitUntil(lambda: app.windows.showing(FirstRunWindow) is not None, timeout=5000)
        setup: FirstRunWindow = app.windows.find(FirstRunWindow)
        wait_loaded(qtbot, app, lambda: uninstalled.get(NAME) is not None)
        assert {window for window, _ in progress_shown} == {"FirstRunWindow"}
        qtbot.waitUntil(lambda: not setup.download.isVisible(), timeout=10_000)  # over
        assert app.windows.find(DownloadWindow) is None
        assert not settings_store.load()[0].first_run_done
        setup.close()  # skipped as a whole
        assert settings_store.load()[0].first_run_done
    finally:
        dispose_app(app)
    again = start(uninstalled, tmp_path)
    try:
        wait_loaded(qtbot, again, lambda: True)
        qtbot.wait(200)  # the set-up window would open on the first turn of the event loop
        assert again.windows.find(FirstRunWindow) is None
    finally:
        dispose_app(again)
