"""Screenshots of every window, taken on a real X server: the tray menu, the HUD (and its
details), each page of the settings window, the GPU self-test window, the History window,
the Model manager (measured), each step of the set-up window, and the window that shows the
first model install.

Usage (from the repository root, after `packaging/dev.sh test` set everything up):

    .venv/bin/python packaging/screenshots.py            # writes docs/screenshots/*.png
    .venv/bin/python packaging/screenshots.py --out DIR

It starts Xvfb with a trayer panel and a PulseAudio virtual microphone, runs Voxtray with
the test model store, dictates one clip so the HUD has numbers, then opens each window
with xdotool (the tray menu's mnemonics, the settings window's Ctrl+1..8) and captures it
with Qt's screen grab. The install window is drawn offscreen with example figures (a real
first install would need the network). Needs: xvfb xdotool trayer pulseaudio
pulseaudio-utils libasound2-plugins.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.pulse import virtual_microphone  # noqa: E402
from tests.support.x11 import XServer, start_tray, tray_panel, x_env, xdotool  # noqa: E402

CLIP = REPO / "tests" / "data" / "speech" / "wav" / "harvard_sb_example1.wav"
INSTALL_WINDOW = """
import sys
from PySide6.QtWidgets import QApplication
from voxtray.ui.download_window import DownloadWindow

app = QApplication([])
window = DownloadWindow("whisper-base")
stage, total = "downloading whisper-base-encoder.int8.onnx", 160_000_000
window.progress.show_progress(stage, 0, total)
window.progress._rate.began -= 8  # eight seconds in
window.progress.show_progress(stage, 96_000_000, total)
window.show()
app.processEvents()
window.grab().save(sys.argv[1])
"""


def get_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "docs" / "screenshots", help="output folder"
    )
    parser.add_argument(
        "--models",
        type=Path,
        default=Path.home() / ".cache" / "voxtray-test" / "models",
        help="an installed model store to use (default: the test suite's)",
    )
    return parser.parse_args()


def wait(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def voxtray(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "voxtray", *args], env=env, capture_output=True, text=True, cwd=REPO
    )
    return done.stdout


GRAB = """
import sys
from PySide6.QtGui import QGuiApplication
app = QGuiApplication(["grab", "-platform", "xcb"])
app.primaryScreen().grabWindow(int(sys.argv[2])).save(sys.argv[1])
"""
SECTIONS = ("general", "microphone", "model", "output", "words", "remote", "history", "advanced")


def capture(env: dict[str, str], target: Path, window: str = "0") -> None:
    """The window with X id `window` (0: the whole screen) as a PNG."""
    subprocess.run([sys.executable, "-c", GRAB, str(target), window], env=env, check=True)
    print(f"wrote {target}", file=sys.stderr)


def find(env: dict[str, str], title: str, timeout: float = 15) -> str | None:
    found: list[str] = []

    def look() -> bool:
        found[:] = subprocess.run(
            ["xdotool", "search", "--name", title], env=env, capture_output=True, text=True
        ).stdout.split()
        return bool(found)

    return found[0] if wait(look, timeout) else None


def main() -> int:
    args = get_args()
    args.out.mkdir(parents=True, exist_ok=True)
    server = XServer()
    display = server.name
    tray = start_tray(display)
    home = Path(tempfile.mkdtemp(prefix="voxtray-shots-"))
    (home / "models").symlink_to(args.models, target_is_directory=True)
    words = {"replacements": "vox tray -> Voxtray\nk eight s -> k8s", "vocabulary": "Voxtray"}
    (home / "settings.json").write_text(
        json.dumps({"hotkey_backend": "none", "hud_enabled": True, "first_run_done": True, **words})
    )
    try:
        with virtual_microphone() as mic:
            env = {**mic.env, **x_env(display), "VOXTRAY_HOME": str(home)}
            app = subprocess.Popen([sys.executable, "-m", "voxtray"], env=env, cwd=REPO)
            try:
                ready = wait(lambda: '"ready"' in voxtray(env, "status", "--json"), 180)
                if not ready:
                    raise SystemExit("voxtray did not become ready")
                voxtray(env, "start")
                mic.play(CLIP)
                voxtray(env, "stop")
                wait(lambda: '"last"' in voxtray(env, "status", "--json"), 30)
                time.sleep(1)
                hud = find(env, "Voxtray HUD")
                if hud:
                    capture(env, args.out / "hud.png", hud)
                panel = tray_panel(display)
                assert panel is not None
                x, y = panel["X"] + panel["WIDTH"] // 2, panel["Y"] + panel["HEIGHT"] // 2
                xdotool(display, "mousemove", "--sync", str(x), str(y), "click", "3")
                time.sleep(1)
                capture(env, args.out / "tray-menu.png")
                if hud:
                    xdotool(display, "key", "t")  # HUD de&tails
                    time.sleep(1)
                    capture(env, args.out / "hud-details.png", hud)
                    xdotool(display, "mousemove", "--sync", str(x), str(y), "click", "3")
                    time.sleep(1)
                xdotool(display, "key", "s")  # &Settings…
                settings = find(env, "Voxtray settings")
                if settings:
                    for number, section in enumerate(SECTIONS, 1):
                        xdotool(display, "windowfocus", "--sync", settings, "key", f"ctrl+{number}")
                        time.sleep(0.7)
                        capture(env, args.out / f"settings-{section}.png", settings)
                    xdotool(display, "windowfocus", "--sync", settings, "key", "Escape")
                xdotool(display, "mousemove", "--sync", str(x), str(y), "click", "3")
                time.sleep(1)
                xdotool(display, "key", "g")  # &GPU self-test…
                selftest = find(env, "Voxtray GPU self-test")
                if selftest:
                    capture(env, args.out / "selftest.png", selftest)
                    xdotool(display, "windowfocus", "--sync", selftest, "key", "Escape")
                voxtray(env, "history")  # as `voxtray history` opens it
                history = find(env, "Voxtray history")
                if history:
                    xdotool(display, "windowsize", "--sync", history, "900", "420")
                    xdotool(display, "windowfocus", "--sync", history)
                    time.sleep(1)
                    capture(env, args.out / "history.png", history)
                    xdotool(display, "windowfocus", "--sync", history, "key", "Escape")
                xdotool(display, "mousemove", "--sync", str(x), str(y), "click", "3")
                time.sleep(1)
                xdotool(display, "key", "m")  # &Models…
                models = find(env, "Voxtray models")
                if models:
                    xdotool(display, "windowsize", "--sync", models, "1000", "480")
                    xdotool(display, "windowfocus", "--sync", models, "key", "alt+m")  # &Measure
                    time.sleep(15)
                    capture(env, args.out / "models.png", models)
                xdotool(display, "mousemove", "--sync", str(x), str(y), "click", "3")
                time.sleep(1)
                xdotool(display, "key", "u")  # Set &up…
                setup = find(env, "Set up Voxtray")
                if setup:
                    for step in ("hotkey", "microphone", "model", "try"):
                        xdotool(display, "windowfocus", "--sync", setup)
                        time.sleep(1)
                        capture(env, args.out / f"setup-{step}.png", setup)
                        xdotool(display, "key", "alt+n")  # &Next
            finally:
                voxtray(env, "quit")
                app.wait(timeout=20)
    finally:
        tray.terminate()
        server.stop()
    capture_install_window(args.out / "install.png")
    return 0


def capture_install_window(target: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO / "app")}
    subprocess.run([sys.executable, "-c", INSTALL_WINDOW, str(target)], env=env, check=True)


if __name__ == "__main__":
    raise SystemExit(main())
