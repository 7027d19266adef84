"""Every window of the real app read through AT-SPI, the way a screen reader reads it, on a
real X desktop (Xvfb and a trayer system tray) with the accessibility bus of a private
D-Bus session: no unnamed interactive control, no Tab trap, no window larger than the
screen. The tree is read by the system Python with Debian's python3-pyatspi."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.atspi import a11y_bus
from tests.support.audio import REPO
from tests.support.models import ensure_installed
from tests.support.process import run_voxtray
from tests.support.waiting import wait_for
from tests.support.x11 import XServer, start_tray, tray_panel, windows, x_env, xdotool
from voxtray.history.store import HISTORY_FILE, Cleanup, History
from voxtray.models.store import ModelStore

pytestmark = pytest.mark.slow

SYSTEM_PYTHON = "/usr/bin/python3"
BUS_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
WALKER = REPO / "tests" / "support" / "atspi_walk.py"
SCREEN = (1280, 800)  # tests.support.x11.XServer's
# Qt names a combo box on Linux by its value and leaves the rest to the label relation,
# which is what Orca reads ("Engine, combo box, auto"): these must have one.
LABELLED = {"combo box", "text", "password text", "spin button", "slider", "table"}


def _missing() -> list[str]:
    missing = [
        t for t in ("Xvfb", "xdotool", "trayer", "dbus-daemon", "dbus-send") if not shutil.which(t)
    ]
    if not Path(BUS_LAUNCHER).exists():
        missing.append("at-spi2-core")
    check = subprocess.run([SYSTEM_PYTHON, "-c", "import pyatspi"], capture_output=True)
    if check.returncode != 0:
        missing.append("python3-pyatspi")
    return missing


@dataclass
class A11yDesktop:
    display: str
    env: dict[str, str]  # DISPLAY and the private session bus, for the app and the walker


@pytest.fixture(scope="module")
def desktop() -> Iterator[A11yDesktop]:
    missing = _missing()
    if missing:
        pytest.skip(f"missing {', '.join(missing)} (packaging/dev.sh installs them)")
    server = XServer()
    tray = start_tray(server.name)
    try:
        with a11y_bus(x_env(server.name)) as env:
            wait_for(lambda: tray_panel(server.name) is not None, 15, "trayer did not start")
            yield A11yDesktop(server.name, env)
    finally:
        tray.terminate()
        tray.wait(timeout=5)
        server.stop()


@pytest.fixture(scope="module")
def app(
    desktop: A11yDesktop, model_store: ModelStore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    ensure_installed(model_store, "whisper-tiny.en")
    ensure_installed(model_store, "silero-vad-v6")
    home = tmp_path_factory.mktemp("a11y") / "home"
    home.mkdir()
    (home / "models").symlink_to(model_store.root, target_is_directory=True)
    words = {"replacements": "vox tray -> Voxtray\nk eight s -> k8s", "vocabulary": "Voxtray"}
    (home / "settings.json").write_text(
        json.dumps({"hotkey_backend": "none", "first_run_done": True, **words})
    )
    _seed_history(home)
    env = {
        **desktop.env,
        "VOXTRAY_HOME": str(home),
        "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
        "QT_ACCESSIBILITY": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO / "app"), os.environ.get("PYTHONPATH", "")]),
    }
    log = home / "app.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "voxtray"], env=env, stdout=sink, stderr=sink, cwd=REPO
        )
    try:
        wait_for(lambda: _state(env) in ("ready", "error"), 180, "the app did not finish loading")
        yield env
    finally:
        _voxtray(env, "quit")
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


CLEANED = "Send the budget to Ana by Friday."


def _seed_history(home: Path) -> None:
    """One dictation AI clean-up tidied, as the app would have stored it."""
    with History(home / HISTORY_FILE) as history:
        history.add(
            CLEANED, model="whisper-tiny.en", engine="ort", provider="cpu", audio_s=2.0,
            timings={"release_to_text": 120.0, "cleanup": 80.0},
            cleanup=Cleanup("send the budget to ana by friday", CLEANED, "accepted: cleaned up"),
        )  # fmt: skip


def _state(env: dict[str, str]) -> str:
    try:
        return str(json.loads(_voxtray(env, "status", "--json"))["state"])
    except (ValueError, KeyError):
        return ""


def _voxtray(env: dict[str, str], *args: str) -> str:
    return run_voxtray(*args, env=env, timeout=60).stdout


def _walk(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [SYSTEM_PYTHON, str(WALKER), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _tray_menu(desktop: A11yDesktop, *keys: str) -> None:
    """Open the tray icon's menu with a right click; then press `keys` in it."""
    panel = tray_panel(desktop.display)
    assert panel is not None
    x, y = panel["X"] + panel["WIDTH"] // 2, panel["Y"] + panel["HEIGHT"] // 2
    xdotool(desktop.display, "mousemove", "--sync", str(x), str(y), "click", "3")
    time.sleep(1.0)
    if keys:
        xdotool(desktop.display, "key", *keys)
        time.sleep(1.5)


def _window(desktop: A11yDesktop, title: str) -> str:
    found: list[str] = []
    wait_for(lambda: found.extend(windows(desktop.display, "--name", title)) or found, 20, title)
    return found[0]


def _problems(tree: dict[str, Any], title: str) -> list[str]:
    window = next((w for w in tree["windows"] if w["title"] == title), None)
    assert window is not None, [w["title"] for w in tree["windows"]]
    _x, _y, width, height = window["extents"]
    problems = []
    if width > SCREEN[0] or height > SCREEN[1]:
        problems.append(f"{title} is {width}x{height}, the screen {SCREEN[0]}x{SCREEN[1]}")
    for control in window["controls"]:
        if not control["name"].strip():
            problems.append(f"unnamed {control['role']} at {control['path']}")
        if control["role"] in LABELLED and not control["labelled_by"]:
            problems.append(f"{control['role']} {control['name']!r} has no label relation")
    return problems


def test_tray_menu_is_read_with_names(app: dict[str, str], desktop: A11yDesktop) -> None:
    """Qt leaves popup menus out of its application's accessible children (QWindow type
    Qt::Popup), so a screen reader hears of the tray menu through focus and selection
    events: open it and walk it with the arrow keys, as a user does, and read those."""
    panel = tray_panel(desktop.display)
    assert panel is not None
    x, y = panel["X"] + panel["WIDTH"] // 2, panel["Y"] + panel["HEIGHT"] // 2
    click = ["mousemove", "--sync", str(x), str(y), "click", "3", "sleep", "1"]
    # Up from the opened menu reaches its last entry (Quit), then Down walks it from the top.
    keys = ["key", "--delay", "200", "Up", *["Down"] * 12]
    try:
        heard = _walk(app, "events", "Voxtray", *click, *keys)["heard"]
    finally:
        xdotool(desktop.display, "key", "Escape")
        time.sleep(0.5)
    items = {h["name"] for h in heard if h["role"] in ("menu item", "check menu item")}
    assert {"Settings…", "GPU self-test…", "Models…", "Set up…", "Quit Voxtray"} <= items, heard
    assert all(h["name"].strip() for h in heard if "menu item" in h["role"]), heard


def test_settings_window_is_named_fits_and_has_no_tab_trap(
    app: dict[str, str], desktop: A11yDesktop
) -> None:
    _tray_menu(desktop, "s")  # &Settings…
    window = _window(desktop, "Voxtray settings")
    geometry = windows(desktop.display, "--name", "Voxtray settings")[window]
    assert geometry["WIDTH"] <= SCREEN[0]
    assert geometry["HEIGHT"] <= SCREEN[1]
    problems: list[str] = []
    for page in (*range(1, 10), 0):  # every section, through its Ctrl+N shortcut
        xdotool(desktop.display, "windowfocus", "--sync", window, "key", f"ctrl+{page}")
        time.sleep(0.4)
        tree = _walk(app, "tree", "Voxtray")
        problems += _problems(tree, "Voxtray settings")
        problems += _tab_problems(app, desktop, window, tree, page)
    assert problems == []
    xdotool(desktop.display, "windowfocus", "--sync", window, "key", "Escape")


def _tab_problems(
    app: dict[str, str], desktop: A11yDesktop, window: str, tree: dict[str, Any], page: int
) -> list[str]:
    """Tab round the page, hearing each focus change as a screen reader does: a control
    Tab cannot leave (or that takes the Tab as text) moves no focus; every control that
    takes the focus must be reached, and the round must come back to the start."""
    settings = next(w for w in tree["windows"] if w["title"] == "Voxtray settings")
    wanted = {c["name"] for c in settings["controls"] if c["focusable"] and c["role"] != "list"}
    presses = len(wanted) + 8
    xdotool(desktop.display, "windowfocus", "--sync", window, "key", f"ctrl+{page}")
    tabs = ["windowfocus", "--sync", window, "key", "--delay", "120", *["Tab"] * presses]
    heard = _walk(app, "events", "Voxtray", *tabs)["heard"]
    focus = [(h["role"], h["name"], h["label"]) for h in heard if h["type"].endswith("focused")]
    problems = []
    if len(focus) < presses - 2:
        problems.append(f"page {page}: {presses} Tabs moved the focus {len(focus)} times: {focus}")
    problems += [f"page {page}: Tab stayed on {a}" for a, b in itertools.pairwise(focus) if a == b]
    missed = wanted - {name for _role, name, _label in focus}
    if missed:
        problems.append(f"page {page}: Tab never reached {sorted(missed)}")
    if ("list", "Sections", "") not in focus:
        problems.append(f"page {page}: Tab did not come round to the sidebar")
    return problems


def test_hud_fits_the_screen(app: dict[str, str]) -> None:
    assert _problems(_walk(app, "tree", "Voxtray"), "Voxtray HUD") == []


def test_history_window_is_named_and_labelled(app: dict[str, str], desktop: A11yDesktop) -> None:
    done = run_voxtray("history", env=app, timeout=60)  # asks the running app to open it
    assert done.returncode == 0, done.stderr
    window = _window(desktop, "Voxtray history")
    tree = _walk(app, "tree", "Voxtray")
    assert _problems(tree, "Voxtray history") == []
    history = next(w for w in tree["windows"] if w["title"] == "Voxtray history")
    names = {c["name"] for c in history["controls"]}
    assert {"Search history", "Dictations", "Copy the text", "Delete the selected dictations"} <= (
        names
    ), names
    table = next(c for c in history["controls"] if c["name"] == "Dictations")
    assert table["cells"][0][:3] == [CLEANED, "", "cleaned up"]  # text, mode, clean-up
    xdotool(desktop.display, "windowfocus", "--sync", window, "key", "Escape")


def test_selftest_window_is_named(app: dict[str, str], desktop: A11yDesktop) -> None:
    _tray_menu(desktop, "g")  # &GPU self-test…
    window = _window(desktop, "Voxtray GPU self-test")
    assert _problems(_walk(app, "tree", "Voxtray"), "Voxtray GPU self-test") == []
    xdotool(desktop.display, "windowfocus", "--sync", window, "key", "Escape")


def _controls(tree: dict[str, Any], title: str) -> set[str]:
    window = next(w for w in tree["windows"] if w["title"] == title)
    return {c["name"] for c in window["controls"]}


def test_set_up_window_is_named_at_every_step(app: dict[str, str], desktop: A11yDesktop) -> None:
    """Each step read as a screen reader reads it, moved through by keyboard (Alt+S, Skip
    this step); there is no NVIDIA driver here, so no GPU step."""
    _tray_menu(desktop, "u")  # Set &up…
    window = _window(desktop, "Set up Voxtray")
    expected = [
        {"Hotkey", "Capture the hotkey", "Skip this step", "Next"},
        {"Microphone level", "Record a test"},
        {"Measure on this machine", "Open the model manager"},
        {"Try it now", "Finish", "Back"},
    ]
    problems: list[str] = []
    for step, names in enumerate(expected):
        tree = _walk(app, "tree", "Voxtray")
        problems += _problems(tree, "Set up Voxtray")
        missing = names - _controls(tree, "Set up Voxtray")
        if missing:
            problems.append(f"step {step + 1} lacks {sorted(missing)}")
        xdotool(desktop.display, "windowfocus", "--sync", window, "key", "alt+s")
        time.sleep(0.5)
    assert problems == []
    xdotool(desktop.display, "windowfocus", "--sync", window, "key", "Escape")
    wait_for(
        lambda: not windows(desktop.display, "--onlyvisible", "--name", "Set up Voxtray"),
        10,
        "open",
    )


def test_model_manager_is_named_and_labelled(app: dict[str, str], desktop: A11yDesktop) -> None:
    _tray_menu(desktop, "m")  # &Models…
    window = _window(desktop, "Voxtray models")
    tree = _walk(app, "tree", "Voxtray")
    assert _problems(tree, "Voxtray models") == []
    names = _controls(tree, "Voxtray models")
    wanted = {"Models", "Latency budget for 5 s of speech", "Measure on this machine"}
    assert wanted <= names, names
    assert "Install the selected model" in names or "Remove the selected model" in names, names
    xdotool(desktop.display, "windowfocus", "--sync", window, "key", "Escape")
    wait_for(
        lambda: not windows(desktop.display, "--onlyvisible", "--name", "Voxtray models"),
        10,
        "open",
    )
