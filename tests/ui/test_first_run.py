"""The set-up window, offscreen with pytest-qt: the hotkey with its conflict check and the
compositor's binding line, the microphone level and a test recording transcribed by a real
model, the recommendation measured on the real installed models, skipping, and finishing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractButton, QWidget

from voxtray.audio.decode import load_audio
from voxtray.choices import Provider
from voxtray.config import Settings
from voxtray.desktop.bindings import binding_line
from voxtray.desktop.session import Desktop, DesktopSession
from voxtray.gpu.providers import nvidia_driver_present
from voxtray.hotkeys.keys import parse_hotkey
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.models.measurements import MeasurementCache
from voxtray.models.progress import InstallProgress, InstallStep
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.output.portal_keys import PortalKeysOutput
from voxtray.resources import resource_path
from voxtray.ui.first_run import FirstRunWindow
from voxtray.ui.setup_desktop import PortalTyping

SWAY = DesktopSession.from_env({"WAYLAND_DISPLAY": "wayland-1", "SWAYSOCK": "/run/sway.sock"})
X11 = DesktopSession.from_env({"DISPLAY": ":0", "XDG_CURRENT_DESKTOP": "XFCE"})


def window(qtbot: Any, store: ModelStore, tmp_path: Path, **kwargs: Any) -> FirstRunWindow:
    settings = Settings(provider=Provider.CPU)
    kwargs.setdefault("gpu_present", False)
    shown = FirstRunWindow(settings, store, cache=MeasurementCache(tmp_path / "m.json"), **kwargs)
    qtbot.addWidget(shown)
    return shown


def test_binding_lines_per_compositor() -> None:
    hotkey = parse_hotkey("super+shift+d")
    assert binding_line(Desktop.SWAY, hotkey) == "bindsym Shift+Mod4+d exec voxtray toggle"
    assert binding_line(Desktop.HYPRLAND, hotkey) == "bind = SHIFT SUPER, d, exec, voxtray toggle"
    assert binding_line(Desktop.RIVER, hotkey) == (
        "riverctl map normal Shift+Super D spawn 'voxtray toggle'"
    )
    assert "Custom Shortcuts" in binding_line(Desktop.GNOME, hotkey)


def test_hotkey_step_checks_and_gives_the_wayland_line(
    qtbot: Any, tmp_path: Path, model_store: ModelStore
) -> None:
    shown = window(qtbot, model_store, tmp_path, session=SWAY)
    shown.show()
    assert shown.step_label.text() == f"Step 1 of {len(shown.steps)}: Hotkey"
    assert shown.binding.isVisible()
    assert shown.binding.text() == "bindsym Ctrl+Mod1+space exec voxtray toggle"
    shown.copy.click()
    assert QGuiApplication.clipboard().text() == shown.binding.text()
    shown.hotkey.setText("ctrl+c")
    assert "common application shortcut" in shown.conflict.text()
    shown.hotkey.setText("super+shift+d")
    assert "looks free" in shown.conflict.text()
    assert shown.binding.text() == "bindsym Shift+Mod4+d exec voxtray toggle"

    on_x11 = window(qtbot, model_store, tmp_path, session=X11)
    on_x11.show()
    assert not on_x11.binding.isVisible()


def test_microphone_step_level_and_test_recording(
    qtbot: Any, tmp_path: Path, model_store: ModelStore, tiny_en: InstalledModel
) -> None:
    recognizer = create_recognizer(tiny_en, EngineChoice(provider=Provider.CPU))
    clip = load_audio(resource_path("selftest.wav"))
    asked: list[float] = []
    played: list[NDArray[np.float32]] = []

    def mic_test(seconds: float) -> tuple[NDArray[np.float32], str]:
        asked.append(seconds)
        return clip, recognizer.transcribe(clip).text

    shown = window(
        qtbot,
        model_store,
        tmp_path,
        session=X11,
        level_source=lambda: -18.0,
        mic_test=mic_test,
        play=played.append,
    )
    shown.next.click()
    assert shown.stack.currentIndex() == 1
    qtbot.waitUntil(lambda: shown.level.value() == -18, timeout=5_000)
    shown.record.click()
    qtbot.waitUntil(lambda: shown.transcript.text().startswith("Heard"), timeout=60_000)
    assert asked == [3.0]
    assert len(played) == 1
    assert len(shown.transcript.text()) > len("Heard: ")


def test_model_step_recommends_and_every_step_can_be_skipped(
    qtbot: Any,
    tmp_path: Path,
    model_store: ModelStore,
    tiny_en: InstalledModel,
    whisper_base: InstalledModel,
) -> None:
    shown = window(qtbot, model_store, tmp_path, session=X11)
    shown.hotkey.setText("super+shift+d")
    shown.skip.click()
    shown.skip.click()
    assert shown.step_label.text().endswith("Model")
    shown.measure.click()
    qtbot.waitUntil(
        lambda: shown.recommendation.text().startswith(("Recommended", "No ")), timeout=300_000
    )
    assert "whisper-" in shown.recommendation.text()
    shown.skip.click()
    assert shown.step_label.text().endswith("Try it")
    assert not shown.skip.isVisible() or not shown.isVisible()
    assert "shift+super+d" in shown.try_intro.text()
    with qtbot.waitSignal(shown.done) as done:
        shown.next.click()
    saved: Settings = done.args[0]
    assert saved.first_run_done
    assert saved.hotkey == "shift+super+d"  # canonical spelling


def test_the_gpu_step_is_there_only_with_an_nvidia_driver(
    qtbot: Any, tmp_path: Path, model_store: ModelStore
) -> None:
    with_gpu = window(qtbot, model_store, tmp_path, session=X11, gpu_present=True)
    assert with_gpu.steps == ("Hotkey", "Microphone", "Model", "GPU", "Try it")
    with_gpu.go(3)
    assert with_gpu.step_label.text() == "Step 4 of 5: GPU"
    [run] = [
        b
        for b in with_gpu.stack.currentWidget().findChildren(QAbstractButton)
        if b.isVisibleTo(with_gpu)
    ]
    assert run.accessibleName() == "Run the GPU self-test"
    shown_buttons = [run, with_gpu.back, with_gpu.skip, with_gpu.next]
    keys = [b.text()[b.text().index("&") + 1].lower() for b in shown_buttons]
    assert len(set(keys)) == len(keys), keys  # each Alt+key reaches one button
    with qtbot.waitSignal(with_gpu.selftest_requested, timeout=1000):
        run.click()
    without = window(qtbot, model_store, tmp_path, session=X11)
    assert without.steps == ("Hotkey", "Microphone", "Model", "Try it")
    detected = window(qtbot, model_store, tmp_path, session=X11, gpu_present=None)
    assert ("GPU" in detected.steps) is nvidia_driver_present()


def test_closing_it_is_skipping_it_all_and_it_is_not_shown_again(
    qtbot: Any, tmp_path: Path, model_store: ModelStore
) -> None:
    shown = window(qtbot, model_store, tmp_path, session=X11)
    shown.show()
    shown.hotkey.setText("super+shift+d")  # typed, never confirmed
    with qtbot.waitSignal(shown.done, timeout=1000) as done:
        shown.close()
    saved: Settings = done.args[0]
    assert saved.first_run_done
    assert saved.hotkey == Settings().hotkey


def test_the_apps_model_install_shows_below_the_steps(
    qtbot: Any, tmp_path: Path, model_store: ModelStore
) -> None:
    shown = window(qtbot, model_store, tmp_path, session=X11)
    shown.show()
    assert not shown.download.isVisible()
    shown.show_install(InstallProgress(InstallStep.DOWNLOADING, "model.int8.onnx", 300, 1200))
    assert shown.download.isVisible()
    assert shown.download.bar.value() == 250  # thousandths
    assert shown.download.stage.text() == "Downloading model.int8.onnx"
    shown.show_install(InstallProgress(InstallStep.UNPACKING))
    assert shown.download.bar.maximum() == 0  # busy: the total is not known
    shown.install_over()
    assert not shown.download.isVisible()


def test_every_control_is_named(qtbot: Any, tmp_path: Path, model_store: ModelStore) -> None:
    shown = window(qtbot, model_store, tmp_path, session=SWAY)
    for widget in shown.findChildren(QWidget):
        if isinstance(widget, QAbstractButton):
            assert widget.accessibleName(), widget.text()
            assert "&" in widget.text(), widget.text()
    assert shown.try_box.accessibleName() == "Try it now"
    assert shown.level.accessibleName() == "Microphone level"


def test_set_up_from_the_tray_records_through_the_app_and_saves(
    qtbot: Any, voxtray: Any, tmp_path: Path
) -> None:
    action = next(a for a in voxtray.menu.menu.actions() if a.text() == "Set &up…")
    action.trigger()
    shown = voxtray.windows.find(FirstRunWindow)
    assert isinstance(shown, FirstRunWindow)
    assert shown.isVisible()
    shown.next.click()
    shown.record.click()
    qtbot.waitUntil(
        lambda: shown.transcript.text().startswith(("Heard", "The test")), timeout=60_000
    )
    assert shown.transcript.text().startswith("Heard"), shown.transcript.text()
    shown.go(len(shown.steps) - 1)
    shown.next.click()
    saved, _warnings = voxtray.writer.store.load()
    assert saved.first_run_done
    assert voxtray.settings.first_run_done


def test_set_up_keeps_what_the_settings_window_changed_meanwhile(qtbot: Any, voxtray: Any) -> None:
    voxtray.open_setup()
    shown = voxtray.windows.find(FirstRunWindow)
    voxtray.writer.write({"history_audio_days": 7})  # saved by the settings window
    voxtray.apply_settings(voxtray.settings.replace(history_audio_days=7))
    shown.hotkey.setText("super+shift+d")
    shown.go(len(shown.steps) - 1)
    shown.next.click()
    saved, _warnings = voxtray.writer.store.load()
    assert (saved.history_audio_days, saved.hotkey, saved.first_run_done) == (
        7,
        "shift+super+d",
        True,
    )
    assert voxtray.settings.history_audio_days == 7
    assert voxtray.settings.hotkey == "shift+super+d"


def test_the_typing_step_follows_the_hotkey_on_gnome_and_kde_wayland_only(
    qtbot: Any, tmp_path: Path, model_store: ModelStore
) -> None:
    """Without a session bus the desktop can lend no keyboard: the step says so and what
    happens instead, and Allow typing stays off. (The question itself is asked of the real
    portals on headless mutter and kwin: tests/e2e/test_setup_portal.py.)"""
    gnome_env = {"WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "GNOME"}
    gnome = DesktopSession.from_env(gnome_env)
    typing = PortalTyping(make=lambda: PortalKeysOutput(gnome_env, "linux"))
    shown = window(
        qtbot, model_store, tmp_path, session=gnome, typing=typing, shortcut=lambda: "no portal"
    )
    assert shown.steps == ("Hotkey", "Typing", "Microphone", "Model", "Try it")
    shown.show()
    shown.activateWindow()
    qtbot.waitUntil(shown.isActiveWindow)
    qtbot.keyClick(shown, Qt.Key.Key_N, Qt.KeyboardModifier.AltModifier)  # a click, animated
    qtbot.waitUntil(lambda: shown.step_label.text() == "Step 2 of 5: Typing")
    step = shown.desktop_step
    assert step is not None
    qtbot.waitUntil(lambda: "lends no keyboard" in step.consent.text(), timeout=10000)
    assert "no session bus" in step.consent.text()
    assert "left on the clipboard" in step.consent.text()
    assert not step.allow.isEnabled()
    qtbot.waitUntil(lambda: "(no portal)" in step.hotkey.text(), timeout=10000)
    assert "tap" in step.hotkey.text()
    for session in (SWAY, X11):
        assert "Typing" not in window(qtbot, model_store, tmp_path, session=session).steps
