"""The line that binds the hotkey to `voxtray toggle` in a Wayland compositor's config,
where no application may grab a key for itself."""

from __future__ import annotations

from voxtray.desktop.session import Desktop
from voxtray.hotkeys.keys import Hotkey, kind, mod_order

COMMAND = "voxtray toggle"
_SWAY = {"ctrl": "Ctrl", "alt": "Mod1", "shift": "Shift", "super": "Mod4"}
_HYPR = {"ctrl": "CTRL", "alt": "ALT", "shift": "SHIFT", "super": "SUPER"}
_RIVER = {"ctrl": "Control", "alt": "Alt", "shift": "Shift", "super": "Super"}
_WAYFIRE = {"ctrl": "<ctrl>", "alt": "<alt>", "shift": "<shift>", "super": "<super>"}
_SETTINGS = {
    Desktop.GNOME: "Settings → Keyboard → Custom Shortcuts",
    Desktop.KDE: "System Settings → Shortcuts → Add Command",
    Desktop.COSMIC: "Settings → Keyboard → Custom Shortcuts",
}


def _mods(hotkey: Hotkey, names: dict[str, str]) -> list[str]:
    kinds = dict.fromkeys(kind(m) for m in sorted(hotkey.modifiers, key=mod_order))
    return [names[k] for k in kinds if k in names]


def binding_line(desktop: Desktop, hotkey: Hotkey) -> str:
    """The config line for `desktop`, or where its settings take a custom shortcut."""
    key = hotkey.key
    if desktop is Desktop.SWAY:
        return f"bindsym {'+'.join([*_mods(hotkey, _SWAY), key])} exec {COMMAND}"
    if desktop is Desktop.HYPRLAND:
        return f"bind = {' '.join(_mods(hotkey, _HYPR))}, {key}, exec, {COMMAND}"
    if desktop is Desktop.RIVER:
        mods = "+".join(_mods(hotkey, _RIVER)) or "None"
        return (
            f"riverctl map normal {mods} {key.upper() if len(key) == 1 else key} spawn '{COMMAND}'"
        )
    if desktop is Desktop.WAYFIRE:
        combo = " ".join([*_mods(hotkey, _WAYFIRE), f"KEY_{key.upper()}"])
        return f"binding_voxtray = {combo}\ncommand_voxtray = {COMMAND}"
    where = _SETTINGS.get(desktop, "your desktop's keyboard settings")
    return f"{where}: {hotkey} runs `{COMMAND}`"
