"""Hotkey strings: the key names Voxtray knows, `Hotkey`, and `parse_hotkey`."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("ctrl", "alt", "shift", "super")
_KIND_ALIASES = {
    "ctrl": ("ctrl", "control", "ctl"),
    "alt": ("alt", "option", "opt"),
    "shift": ("shift",),
    "super": ("super", "win", "windows", "cmd", "command", "meta"),
}
# Modifier names: the kind alone matches either side; left_/right_ names one side.
MODIFIERS = frozenset(f"{side}{kind}" for kind in KINDS for side in ("", "left_", "right_"))

NAMED_KEYS: dict[str, tuple[str, ...]] = {
    "space": ("space", "spacebar"),
    "enter": ("enter", "return"),
    "tab": ("tab",),
    "esc": ("esc", "escape"),
    "backspace": ("backspace",),
    "delete": ("delete", "del"),
    "insert": ("insert", "ins"),
    "home": ("home",),
    "end": ("end",),
    "page_up": ("page_up", "pageup", "pgup", "prior"),
    "page_down": ("page_down", "pagedown", "pgdn", "next"),
    "up": ("up",),
    "down": ("down",),
    "left": ("left",),
    "right": ("right",),
    "caps_lock": ("caps_lock", "capslock"),
    "num_lock": ("num_lock", "numlock"),
    "scroll_lock": ("scroll_lock", "scrolllock"),
    "print_screen": ("print_screen", "printscreen", "print", "prtsc", "prtscn", "sysrq"),
    "pause": ("pause", "break"),
    "menu": ("menu", "apps", "application", "context_menu"),
    "minus": ("minus", "-"),
    "equal": ("equal", "equals", "="),
    "comma": ("comma", ","),
    "period": ("period", "dot", "."),
    "slash": ("slash", "/"),
    "backslash": ("backslash", "\\"),
    "semicolon": ("semicolon", ";"),
    "apostrophe": ("apostrophe", "quote", "'"),
    "grave": ("grave", "backtick", "backquote", "`"),
    "bracket_left": ("bracket_left", "bracketleft", "["),
    "bracket_right": ("bracket_right", "bracketright", "]"),
}
PLAIN_KEYS = frozenset(
    [*"abcdefghijklmnopqrstuvwxyz0123456789", *(f"f{n}" for n in range(1, 25)), *NAMED_KEYS]
)
CHAR_NAMES = {alias: name for name, aliases in NAMED_KEYS.items() for alias in aliases}
# A US layout's shifted characters, so that shift+1 arriving as "!" still releases "1".
_SHIFTED = dict(zip('!@#$%^&*()_+{}|:"<>?~', "1234567890-=[]\\;',./`", strict=True))


def _build_aliases() -> dict[str, str]:
    aliases = {name: name for name in PLAIN_KEYS | MODIFIERS}
    aliases |= CHAR_NAMES
    for kind, words in _KIND_ALIASES.items():
        for word in words:
            aliases[word] = kind
            for left, right in ((f"left_{word}", f"right_{word}"), (f"{word}_l", f"{word}_r")):
                aliases |= {left: f"left_{kind}", right: f"right_{kind}"}
            aliases |= {f"l{word}": f"left_{kind}", f"r{word}": f"right_{kind}"}
    aliases |= {"alt_gr": "right_alt", "altgr": "right_alt"}
    return aliases


_ALIASES = _build_aliases()


def kind(name: str) -> str:
    """The modifier kind of a sided name: `right_ctrl` gives `ctrl`."""
    return name.removeprefix("left_").removeprefix("right_")


def mod_order(name: str) -> tuple[int, str]:
    """Sort key putting modifiers in ctrl, alt, shift, super order."""
    return KINDS.index(kind(name)), name


@dataclass(frozen=True)
class Hotkey:
    """A key combination: modifiers held together with one key.

    A modifier-only hotkey such as `right_ctrl` has that modifier as its `key`; with
    several modifiers and no other key, `key` is the last in ctrl, alt, shift, super order.

    Attributes:
        modifiers: Modifier names: `ctrl`, `alt`, `shift`, `super` (either side) or a
            sided `left_ctrl`, `right_alt`, ...
        key: A key name: `a`-`z`, `0`-`9`, `f1`-`f24`, `space`, `enter`, ... or a modifier.
    """

    modifiers: frozenset[str]
    key: str

    def __post_init__(self) -> None:
        unknown = sorted(name for name in self.modifiers if name not in MODIFIERS)
        if unknown:
            raise ValueError(f"not modifiers: {', '.join(unknown)}")
        if self.key not in PLAIN_KEYS | MODIFIERS:
            raise ValueError(f"unknown key {self.key!r}")
        kinds = [kind(name) for name in self.parts if name in MODIFIERS]
        if len(kinds) != len(set(kinds)):
            raise ValueError(f"hotkey names a modifier twice: {self}")
        if self.key in MODIFIERS:
            # Modifier-only combos are unordered: store them one way so equal ones compare equal.
            ordered = sorted(self.parts, key=mod_order)
            object.__setattr__(self, "modifiers", frozenset(ordered[:-1]))
            object.__setattr__(self, "key", ordered[-1])

    @property
    def parts(self) -> frozenset[str]:
        """Every name in the combination, the key included."""
        return self.modifiers | {self.key}

    @property
    def modifier_only(self) -> bool:
        """Whether the combination is made of modifiers alone, such as `right_ctrl`."""
        return self.key in MODIFIERS

    def __str__(self) -> str:
        return "+".join([*sorted(self.modifiers, key=mod_order), self.key])


def parse_hotkey(text: str) -> Hotkey:
    """Parse a hotkey such as `ctrl+alt+space`, `<ctrl>+<shift>+d`, `F9` or `right_ctrl`.

    Case does not matter; `control`/`option`/`win`/`cmd`/`meta` and pynput's `<ctrl_r>`
    style are accepted. At most one key may be a non-modifier.

    Args:
        text: The hotkey as the user wrote it.

    Returns:
        The hotkey; `str()` of it is the canonical spelling.

    Raises:
        ValueError: With a one-line message naming the problem.
    """
    shown = " ".join(text.split())
    if not shown:
        raise ValueError("empty hotkey: write one such as ctrl+alt+space")
    names = [_parse_part(part, shown) for part in shown.split("+")]
    keys = [name for name in names if name not in MODIFIERS]
    if len(keys) > 1:
        raise ValueError(f"hotkey {shown!r} has {len(keys)} non-modifier keys; use one")
    kinds = [kind(name) for name in names if name in MODIFIERS]
    repeated = sorted({kind for kind in kinds if kinds.count(kind) > 1})
    if repeated:
        raise ValueError(f"hotkey {shown!r} names {', '.join(repeated)} more than once")
    mods = sorted((name for name in names if name in MODIFIERS), key=mod_order)
    key = keys[0] if keys else mods.pop()
    return Hotkey(frozenset(mods), key)


def _parse_part(part: str, shown: str) -> str:
    word = part.strip().lower()
    if word.startswith("<") and word.endswith(">"):
        word = word[1:-1].strip()
    if not word:
        raise ValueError(f"hotkey {shown!r} has an empty part (keys are joined by '+')")
    if len(word) > 1:
        word = word.replace(" ", "_").replace("-", "_")
    try:
        return _ALIASES[word]
    except KeyError:
        raise ValueError(f"unknown key {part.strip()!r} in hotkey {shown!r}") from None


def char_name(char: str | None) -> str | None:
    """The key name for a typed character (`!` gives `1`, ctrl+h's `\\x08` gives `h`)."""
    if not char:
        return None
    if len(char) == 1 and 1 <= ord(char) <= 26:
        # Ctrl+letter arrives as a control character on some platforms.
        return chr(ord("a") + ord(char) - 1)
    lower = char.lower()
    lower = _SHIFTED.get(lower, lower)
    if len(lower) == 1 and lower.isascii() and lower.isalnum():
        return lower
    return CHAR_NAMES.get(lower)
