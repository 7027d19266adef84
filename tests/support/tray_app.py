"""The real tray app as a user starts it (`python -m voxtray`), for end-to-end tests that
drive it through its control socket: a returning user's data folder, its status, and the
app running until the test is done."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from tests.support.atspi import GtkTarget
from tests.support.audio import REPO
from tests.support.models import ensure_installed
from tests.support.process import run_voxtray
from tests.support.pulse import VirtualMicrophone
from tests.support.waiting import settled_text, wait_for
from voxtray.models.store import ModelStore


def returning_home(tmp_path: Path, store: ModelStore, **settings: object) -> Path:
    """A VOXTRAY_HOME over the test store's default models, with the settings of a user
    who has done the set-up; the hotkey is off, as the tests press nothing."""
    for name in store.catalog.defaults:
        ensure_installed(store, name)
    home = tmp_path / "home"
    home.mkdir()
    (home / "models").symlink_to(store.root, target_is_directory=True)
    chosen = {"hotkey_backend": "none", "first_run_done": True, **settings}
    (home / "settings.json").write_text(json.dumps(chosen))
    return home


def app_status(env: dict[str, str]) -> dict[str, Any]:
    """`voxtray status --json`; {"state": "down"} when no app answers."""
    done = run_voxtray("status", "--json", env=env, timeout=30, cwd=REPO)
    return json.loads(done.stdout) if done.returncode == 0 else {"state": "down"}


def wait_for_state(env: dict[str, str], state: str, timeout: float) -> None:
    """Wait until the app's status says ``state``."""
    wait_for(
        lambda: app_status(env)["state"] == state,
        timeout,
        lambda: f"voxtray never became {state}: {app_status(env)}",
    )


@contextlib.contextmanager
def running_tray_app(env: dict[str, str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The app, once it is ready; quit with `voxtray quit` (killed if that fails) on leaving."""
    with log_path.open("wb") as log:
        app = subprocess.Popen(
            [sys.executable, "-m", "voxtray"], env=env, stdout=log, stderr=log, cwd=REPO
        )
        try:
            ready = lambda: app_status(env)["state"] == "ready"  # noqa: E731
            wait_for(ready, 180, lambda: f"voxtray never became ready: {log_path.read_text()}")
            yield app
        finally:
            quit_tray_app(app, env)


def quit_tray_app(app: subprocess.Popen[bytes], env: dict[str, str]) -> None:
    """`voxtray quit`, then the app's exit; killed when it does not leave in 15 s."""
    run_voxtray("quit", env=env, timeout=30, cwd=REPO)
    try:
        app.wait(timeout=15)
    except subprocess.TimeoutExpired:
        app.kill()
        app.wait()


def typed_into_gtk_window(
    env: dict[str, str],
    window_env: dict[str, str],
    workdir: Path,
    dictating: Callable[[], AbstractContextManager[object]],
    speech: tuple[VirtualMicrophone, Path],
    settle_s: float = 30,
) -> str:
    """What a GTK window, opened on `window_env`'s desktop and focused, got from the app
    (`env`) while `dictating()` held it listening and the clip was played into the
    microphone: `speech` is (microphone, WAV file)."""
    mic, clip = speech
    target = GtkTarget("editable", workdir, window_env)
    try:
        time.sleep(1.0)  # the new window has the focus
        with dictating():
            wait_for_state(env, "listening", 10)
            mic.play(clip)
        return settled_text(target.text, settle_s)
    finally:
        target.close()
