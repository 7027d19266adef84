"""The Qt platform chosen from the session, and the app refusing to start without one."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.audio import REPO
from voxtray.errors import ExitCode
from voxtray.ui.platform import NoDesktopError, hud_can_show, session_platform


@pytest.mark.parametrize(
    ("env", "platform"),
    [
        ({"WAYLAND_DISPLAY": "wayland-1"}, "wayland"),
        ({"WAYLAND_DISPLAY": "wayland-1", "DISPLAY": ":0"}, "wayland;xcb"),
        ({"DISPLAY": ":0"}, "xcb"),
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "w", "QT_QPA_PLATFORM": "xcb"}, "xcb"),
        ({"QT_QPA_PLATFORM": "offscreen"}, "offscreen"),
    ],
)
def test_platform_follows_the_session(env: dict[str, str], platform: str) -> None:
    assert session_platform(env) == platform


def test_no_session_is_an_error_not_an_invisible_app() -> None:
    with pytest.raises(NoDesktopError, match="neither WAYLAND_DISPLAY nor DISPLAY") as caught:
        session_platform({"QT_QPA_PLATFORM": " "})
    assert caught.value.exit_code == ExitCode.NO_DESKTOP


def test_hud_window_only_where_it_cannot_take_the_focus() -> None:
    assert not hud_can_show("wayland")
    assert not hud_can_show("wayland-egl")
    assert hud_can_show("xcb")
    assert hud_can_show("offscreen")


def test_voxtray_without_a_desktop_says_so_in_one_line(tmp_path: object) -> None:
    hidden = ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    env["VOXTRAY_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "voxtray"], env=env, capture_output=True, text=True, timeout=60,
        cwd=REPO,
    )  # fmt: skip
    assert done.returncode == ExitCode.NO_DESKTOP, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "neither WAYLAND_DISPLAY nor DISPLAY" in lines[0]
