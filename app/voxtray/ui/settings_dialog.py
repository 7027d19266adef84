"""The settings window under its former name (`voxtray.ui.settings.window`)."""

from voxtray.ui.settings.hotkey_edit import HotkeyEdit, hotkey_from_event
from voxtray.ui.settings.window import SettingsWindow

SettingsDialog = SettingsWindow

__all__ = ["HotkeyEdit", "SettingsDialog", "hotkey_from_event"]
