"""Which output "auto" picks, and what an unavailable choice tells the user (no desktop)."""

from __future__ import annotations

import os
import shutil
import types
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from voxtray.choices import OutputMethod
from voxtray.desktop.session import DesktopSession
from voxtray.errors import ExitCode, VoxtrayError
from voxtray.output import (
    DeliveryError,
    TextOutput,
    choose_output,
    create_output,
    keyboard_typer,
    pynput_typer,
)
from voxtray.output.chooser import auto_order

X11 = {"DISPLAY": ":0", "XDG_SESSION_TYPE": "x11"}
WAYLAND = {"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"}


def only(*tools: str) -> Callable[..., str | None]:
    """A shutil.which that finds just these tools."""

    def which(name: str, *args: object, **kwargs: object) -> str | None:
        return f"/usr/bin/{name}" if name in tools else None

    return which


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> Callable[[Iterable[str]], None]:
    def install(names: Iterable[str]) -> None:
        monkeypatch.setattr(shutil, "which", only(*names))

    install(())
    return install


@pytest.fixture
def pynput_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pynput_typer, "load_keyboard", lambda: types.ModuleType("fake"))
    monkeypatch.setattr(pynput_typer, "x_server_reachable", lambda display: True)


@pytest.fixture
def pynput_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail() -> types.ModuleType:
        raise ImportError("failed to acquire X connection: Can't connect to display")

    monkeypatch.setattr(pynput_typer, "load_keyboard", fail)


def test_every_method_has_a_backend() -> None:
    for method in OutputMethod:
        if method is OutputMethod.AUTO:
            continue
        output = create_output(method, {}, platform="linux")
        assert output.name is method
        assert isinstance(output, TextOutput)


def session(env: dict[str, str], platform: str) -> DesktopSession:
    return DesktopSession.from_env(env, platform)


def test_auto_orders() -> None:
    assert auto_order(session(WAYLAND, "linux")) == ("wtype", "ydotool", "clipboard")
    assert auto_order(session(X11, "linux")) == ("xdotool", "pynput", "clipboard")
    assert auto_order(session({}, "win32")) == ("keyboard", "pynput")
    assert auto_order(session(X11, "darwin")) == ("pynput",)  # XQuartz sets DISPLAY on macOS
    assert auto_order(session({}, "linux")) == ()


def test_x11_prefers_xdotool(tools: Callable[[Iterable[str]], None], pynput_works: None) -> None:
    tools(["xdotool", "xclip"])
    chosen = choose_output("auto", X11, platform="linux")
    assert chosen.name == "xdotool"
    assert isinstance(chosen, TextOutput)


def test_x11_without_xdotool_takes_pynput(
    tools: Callable[[Iterable[str]], None], pynput_works: None
) -> None:
    tools(["xclip"])
    assert choose_output("auto", X11, platform="linux").name == "pynput"


def test_x11_with_nothing_says_what_to_install(
    tools: Callable[[Iterable[str]], None], pynput_fails: None
) -> None:
    with pytest.raises(DeliveryError) as raised:
        choose_output("auto", X11, platform="linux")
    message = str(raised.value)
    assert message.startswith("nothing can type on this x11 desktop: ")
    assert "xdotool not found: sudo apt-get install xdotool" in message
    assert "xclip not found: sudo apt-get install xclip" in message
    assert "\n" not in message


def test_clipboard_on_x11_needs_something_to_press_ctrl_v(
    tools: Callable[[Iterable[str]], None], pynput_fails: None
) -> None:
    tools(["xclip"])
    with pytest.raises(DeliveryError, match="nothing can press ctrl\\+v: xdotool not found"):
        choose_output("clipboard", X11, platform="linux")


def test_wayland_prefers_wtype(tools: Callable[[Iterable[str]], None], pynput_works: None) -> None:
    tools(["wtype", "ydotool", "wl-copy", "wl-paste", "xdotool"])
    assert choose_output("auto", WAYLAND, platform="linux").name == "wtype"


def test_wayland_never_falls_back_to_x11_tools(
    tools: Callable[[Iterable[str]], None], pynput_works: None
) -> None:
    """XWayland's DISPLAY reaches X clients only: xdotool would type into nothing."""
    tools(["xdotool", "xclip"])
    with pytest.raises(DeliveryError) as raised:
        choose_output("auto", WAYLAND, platform="linux")
    message = str(raised.value)
    assert "wtype not found: sudo apt-get install wtype" in message
    assert "ydotool not found: sudo apt-get install ydotool" in message
    assert "wl-copy not found: sudo apt-get install wl-clipboard" in message


def test_gnome_skips_wtype_for_ydotool(
    tools: Callable[[Iterable[str]], None], tmp_path: Path
) -> None:
    tools(["wtype", "ydotool", "ydotoold"])
    socket = tmp_path / "ydotool.sock"
    socket.touch()
    env = {**WAYLAND, "XDG_CURRENT_DESKTOP": "ubuntu:GNOME", "YDOTOOL_SOCKET": str(socket)}
    assert choose_output("auto", env, platform="linux").name == "ydotool"
    with pytest.raises(DeliveryError, match="GNOME's compositor lacks the virtual-keyboard"):
        choose_output("wtype", env, platform="linux")


def test_ydotool_needs_its_daemon(tools: Callable[[Iterable[str]], None], tmp_path: Path) -> None:
    tools(["ydotool", "ydotoold"])
    env = {**WAYLAND, "YDOTOOL_SOCKET": str(tmp_path / "absent.sock")}
    with pytest.raises(DeliveryError, match="ydotoold is not running"):
        choose_output("ydotool", env, platform="linux")


def test_wayland_clipboard_with_ydotool_keys(
    tools: Callable[[Iterable[str]], None], tmp_path: Path
) -> None:
    tools(["ydotool", "ydotoold", "wl-copy", "wl-paste"])
    socket = tmp_path / "ydotool.sock"
    socket.touch()
    env = {**WAYLAND, "XDG_CURRENT_DESKTOP": "KDE", "YDOTOOL_SOCKET": str(socket)}
    assert choose_output("clipboard", env, platform="linux").available()


def test_windows_prefers_keyboard(monkeypatch: pytest.MonkeyPatch, pynput_works: None) -> None:
    monkeypatch.setattr(keyboard_typer, "load_keyboard", lambda: types.ModuleType("keyboard"))
    assert choose_output("auto", {}, platform="win32").name == "keyboard"


def test_windows_falls_back_to_pynput(monkeypatch: pytest.MonkeyPatch, pynput_works: None) -> None:
    def missing() -> types.ModuleType:
        raise ModuleNotFoundError("No module named 'keyboard'", name="keyboard")

    monkeypatch.setattr(keyboard_typer, "load_keyboard", missing)
    assert choose_output("auto", {}, platform="win32").name == "pynput"


def test_macos_takes_pynput(pynput_works: None) -> None:
    assert choose_output("auto", {}, platform="darwin").name == "pynput"


def test_no_session_at_all(tools: Callable[[Iterable[str]], None]) -> None:
    tools(["xdotool", "wtype"])
    with pytest.raises(DeliveryError, match="neither DISPLAY nor WAYLAND_DISPLAY is set"):
        choose_output("auto", {}, platform="linux")


def test_explicit_choice_names_the_install(tools: Callable[[Iterable[str]], None]) -> None:
    with pytest.raises(DeliveryError) as raised:
        choose_output("xdotool", X11, platform="linux")
    assert str(raised.value) == "xdotool not found: sudo apt-get install xdotool"
    assert isinstance(raised.value, VoxtrayError)


def test_explicit_choice_outside_its_session(tools: Callable[[Iterable[str]], None]) -> None:
    tools(["wtype", "xdotool"])
    with pytest.raises(DeliveryError, match="WAYLAND_DISPLAY is not set"):
        choose_output("wtype", X11, platform="linux")
    with pytest.raises(DeliveryError, match="DISPLAY is not set"):
        choose_output("xdotool", {}, platform="linux")
    with pytest.raises(DeliveryError, match="pynput types only through X11 here"):
        choose_output("pynput", {"WAYLAND_DISPLAY": "wayland-0"}, platform="linux")


def test_explicit_pynput_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> types.ModuleType:
        raise ModuleNotFoundError("No module named 'pynput'", name="pynput")

    monkeypatch.setattr(pynput_typer, "load_keyboard", missing)
    monkeypatch.setattr(pynput_typer, "x_server_reachable", lambda display: True)
    with pytest.raises(DeliveryError, match="pynput is not installed: pip install pynput"):
        choose_output("pynput", X11, platform="linux")


def test_unknown_name_is_a_usage_error() -> None:
    with pytest.raises(DeliveryError, match="unknown output 'xdotools'") as raised:
        choose_output("xdotools", X11, platform="linux")
    assert raised.value.exit_code == ExitCode.USAGE


def test_create_output_does_not_check() -> None:
    output = create_output("wtype", {}, platform="linux")
    assert output.name == "wtype"
    assert not output.available()


def test_keyboard_package_availability_never_raises() -> None:
    """Here (no /dev/uinput, no dumpkeys) it is unavailable, with the reason."""
    output = create_output("keyboard")
    reason = output.problem()
    assert output.available() is (reason is None)
    if not os.access("/dev/uinput", os.W_OK):  # this box and CI: no uinput device
        assert reason is not None
        assert not output.available()


def test_pynput_names_an_unreachable_display() -> None:
    """The real check, on a display number nothing listens on."""
    output = create_output("pynput", {"DISPLAY": ":97"}, platform="linux")
    assert output.problem() == "pynput cannot reach the X server at DISPLAY=:97"
