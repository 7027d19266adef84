"""Release to last character on Wayland desktops, per target app: ``python -m
tools.measure.wayland_release [--runs N] [--desktops sway,GNOME,KDE,GNOME48]``.

Each desktop is started headless (sway; mutter and kwin with Debian's real portals), and
the Qt-free core dictates a 100-character clip (LJSpeech LJ050-0131, 7.7 s, fed at real
time) with the default settings and the output ``auto`` picks there, into each target in
turn: a GTK window, the Qt window without accessibility, Chromium and Firefox as native
Wayland clients, and a terminal running ``cat`` (foot; Konsole on KDE). The time runs from
the key's release (`Dictation.stop` called) until the target's own read-back holds the last
word. GNOME's consent dialog is answered through the accessibility bus at load, as the
tests do. GNOME48 is GNOME Shell 48 in a Debian 13 root (`tests.support.gnome_root`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.atspi import GtkTarget
from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.dictation_rig import DictationRig, build_dictation
from tests.support.gnome_root import gnome_desktop
from tests.support.models import ensure_installed, suite_home
from tests.support.native_targets import BrowserTarget, TerminalTarget
from tests.support.portal_desktop import approve_gnome_consent, portal_desktop
from tests.support.wayland import wayland_desktop
from tests.support.x11 import TargetWindow
from voxtray.config import Settings
from voxtray.models.catalog import load_catalog
from voxtray.models.store import ModelStore
from voxtray.output.portal_keys import PortalKeysOutput

CLIP = SPEECH_DIR / "wav" / "ljspeech_LJ050-0131.wav"
LAST_WAIT_S = 20.0


@dataclass
class Target:
    name: str
    read: Callable[[], str]
    close: Callable[[], None]


@dataclass
class Figure:
    desktop: str
    target: str
    ms: list[float]
    chars: int
    output: str
    problem: str = ""

    def line(self) -> str:
        if self.problem:
            return f"| {self.desktop} | {self.target} | {self.output} | - | {self.problem} |"
        times = ", ".join(f"{ms:.0f}" for ms in self.ms)
        median = statistics.median(self.ms)
        return (
            f"| {self.desktop} | {self.target} | {self.output} | {self.chars} | "
            f"median {median:.0f} ms ({times}) |"
        )


def _open(name: str, env: dict[str, str], workdir: Path) -> Target:
    if name == "GTK":
        gtk = GtkTarget("editable", workdir, env)
        return Target(name, gtk.text, gtk.close)
    if name == "Qt":
        qt = TargetWindow("", workdir, env={**env, "QT_QPA_PLATFORM": "wayland"})

        def close_qt() -> None:
            qt.proc.terminate()
            qt.proc.wait(10)

        return Target(name, qt.text, close_qt)
    if name in ("Chromium", "Firefox"):
        browser = BrowserTarget(name.lower(), env)
        return Target(name, browser.text, browser.close)
    # KDE's own terminal there: foot 1.13 dies as it starts on headless kwin 5.27.
    program = "konsole" if "KDE" in env.get("XDG_CURRENT_DESKTOP", "") else "foot"
    terminal = TerminalTarget(env, workdir, program)
    return Target(f"{name} ({program})", terminal.text, terminal.close)


def _last_word_in(read: Callable[[], str], text: str) -> bool:
    words = text.split()
    return bool(words) and read().rstrip().endswith(words[-1])


def _dictate(rig: DictationRig, target: Target) -> tuple[float, int, str]:
    """One dictation into the focused target: ms from release to its last word there."""
    before = target.read()
    assert rig.dictation.start()
    rig.fake.streams[-1].wait_for(rig.speak(read_wav(CLIP)))
    released = time.perf_counter()
    utterance = rig.dictation.stop()
    assert utterance is not None
    deadline = time.monotonic() + LAST_WAIT_S
    while not _last_word_in(target.read, utterance.text):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{target.name} did not show {utterance.text!r}")
        time.sleep(0.005)
    shown_ms = 1000 * (time.perf_counter() - released)
    arrived = target.read()[len(before) :]
    return shown_ms, len(arrived.strip()), utterance.output.split(" · ")[0]


@contextlib.contextmanager
def _session_env(env: dict[str, str]) -> Iterator[None]:
    """Voxtray as the session starts it: the desktop's environment, no X display."""
    saved = dict(os.environ)
    os.environ.update(env)
    for key in ("DISPLAY", "QT_QPA_PLATFORM"):
        os.environ.pop(key, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


Answer = Callable[[], object]
"""Starts answering the desktop's typing question, where it asks one."""


def _measure(
    desktop: str,
    env: dict[str, str],
    targets: tuple[str, ...],
    store: ModelStore,
    runs: int,
    answer: Answer | None = None,
) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="voxtray-release-") as tmp:
        workdir = Path(tmp)
        with _session_env({**env, "VOXTRAY_HOME": str(workdir / "home")}):
            return _measure_in(desktop, env, targets, store, runs, workdir, answer)


def _measure_in(
    desktop: str,
    env: dict[str, str],
    targets: tuple[str, ...],
    store: ModelStore,
    runs: int,
    workdir: Path,
    answer: Answer | None,
) -> list[Figure]:
    figures = []
    if answer is not None:
        answer()
    rig = build_dictation(store, workdir / "history.sqlite3", real_outputs=True, speed=1.0)
    try:
        rig.dictation.load(Settings())
        output = rig.dictation.output()
        if isinstance(output, PortalKeysOutput):  # the question answered before any window
            deadline = time.monotonic() + 60
            while not output.keyboard.active and time.monotonic() < deadline:
                time.sleep(0.1)
        for name in targets:
            figures.append(_measure_target(desktop, name, env, workdir, rig, runs))
            print(figures[-1].line(), flush=True)
    finally:
        rig.close()
    return figures


def _measure_target(
    desktop: str, name: str, env: dict[str, str], workdir: Path, rig: DictationRig, runs: int
) -> Figure:
    try:
        target = _open(name, env, workdir)
    except RuntimeError as exc:
        return Figure(desktop, name, [], 0, "", f"did not start: {exc}")
    try:
        time.sleep(1.0)  # the new window has the focus
        figure = Figure(desktop, name, [], 0, "")
        for _ in range(runs):
            ms, chars, output = _dictate(rig, target)
            figure.ms.append(ms)
            figure.chars, figure.output = chars, output
        return figure
    except (RuntimeError, AssertionError) as exc:
        said = f" (said: {'; '.join(rig.warnings)})" if rig.warnings else ""
        return Figure(desktop, name, [], 0, "", f"failed: {exc}{said}")
    finally:
        target.close()


def _sway(targets: tuple[str, ...], store: ModelStore, runs: int) -> list[Figure]:
    with wayland_desktop() as sway:
        return _measure("sway", sway.env(), targets, store, runs)


def _gnome48(targets: tuple[str, ...], store: ModelStore, runs: int) -> list[Figure]:
    """GNOME 48 in its Debian 13 root; this machine's programs reach it by its sockets."""
    with tempfile.TemporaryDirectory(prefix="voxtray-gnome48-") as tmp:
        where = Path(tmp)
        (where / "share").mkdir()
        with gnome_desktop(where, where / "share") as gnome:
            gnome.leave_overview()
            env = gnome.client_env()
            return _measure("GNOME 48", env, targets, store, runs, gnome.allow_remote_interaction)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.measure.wayland_release")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--desktops", default="sway,GNOME,KDE")
    # Chromium first: on headless sway (no physical keyboard) it crashes as it starts once a
    # virtual keyboard has come and gone, as one does for every dictation typed there.
    parser.add_argument("--targets", default="Chromium,GTK,Qt,Firefox,terminal")
    args = parser.parse_args(argv)
    targets = tuple(args.targets.split(","))
    store = ModelStore(suite_home() / "models", load_catalog())
    for name in store.catalog.defaults:
        ensure_installed(store, name)
    print("| desktop | target | output | characters | release to last word |")
    print("|---|---|---|---|---|")
    for desktop in args.desktops.split(","):
        if desktop == "sway":
            _sway(targets, store, args.runs)
            continue
        if desktop == "GNOME48":
            _gnome48(targets, store, args.runs)
            continue
        with portal_desktop(desktop) as running:
            answer = (lambda: approve_gnome_consent(running.env)) if desktop == "GNOME" else None
            _measure(desktop, running.env, targets, store, args.runs, answer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
