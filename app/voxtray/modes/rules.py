"""The `modes` setting, one mode a line, read by a person as easily as by Voxtray:

    terminal: app=xterm,foot,konsole output=type
    code: app=code,jetbrains-* capitals=off period=off
    notes: app=obsidian replace="to do -> TODO:; vox tray -> Voxtray" vocabulary=Zettelkasten

A line is a name, a colon, and ``key=value`` pairs; a value with spaces is put in quotes.
``app`` (and ``title``) hold patterns, comma-separated, matched without regard to case
against what the desktop tells of the app in focus (X11's WM_CLASS, sway's app_id,
Hyprland's class, the accessibility bus's application name), with ``*`` for any
characters; the first mode whose patterns match wins. The other keys override one setting
each for that app. A line that cannot be read is left out with one line saying why; the
others still work. ``#`` starts a comment.
"""

from __future__ import annotations

import fnmatch
import shlex
from dataclasses import dataclass, field, fields

from voxtray.choices import OutputMethod, PasteChord
from voxtray.errors import BadInputError
from voxtray.text.postprocess import Replacement, bad_replacement_lines, parse_replacements
from voxtray.text.vocabulary import parse_vocabulary

TYPE = "type"
"""Output value meaning: always key by key, never a paste (what a terminal takes)."""
ON_OFF = {"on": True, "off": False}
PROMPTS = ("default", "casual", "formal")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")

DEFAULT_MODES = "\n".join(
    (
        "# Terminals: typed key by key, never pasted (Ctrl+V is a byte there, not a paste).",
        "terminal: app=xterm,uxterm,*terminal*,foot,footclient,*konsole,kitty,alacritty,kgx"
        ",org.gnome.console,wezterm*,tilix,terminator,urxvt,st-256color output=type period=off",
        "# Code editors: no capital at the start, no full stop at the end.",
        "code: app=code,code-oss,codium,vscodium,*jetbrains*,emacs,gvim,neovide,zed"
        ",sublime_text capitals=off period=off",
        "# Chat: no full stop at the end; clean-up, when on, keeps it casual.",
        "chat: app=slack,discord,signal,*telegram*,element,teams*,whatsapp* period=off"
        " prompt=casual",
        "",
    )
)


@dataclass(frozen=True)
class AppIdentity:
    """What the desktop told of the app in focus: its names (lower case) and window title."""

    names: tuple[str, ...] = ()
    title: str = ""

    @property
    def shown(self) -> str:
        return self.names[0] if self.names else "an unknown app"


@dataclass(frozen=True)
class Mode:
    """One mode: where it applies and what it overrides (None: the setting as it is)."""

    name: str
    apps: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()
    output: str | None = None
    """An `OutputMethod` value, or `TYPE`."""
    spoken_punctuation: bool | None = None
    spoken_commands: bool | None = None
    capitals: bool | None = None
    """Off: the text starts in lower case (an acronym or "I" stays)."""
    period: bool | None = None
    """Off: a full stop ending the text is left out."""
    language: str | None = None
    """What recognition hears (a multilingual model; "auto" detects) and the spoken tables."""
    cleanup: bool | None = None
    prompt: str | None = None
    """A clean-up preset: default, casual or formal."""
    paste: PasteChord | None = None
    """The keys that paste into the app (a terminal's ctrl+shift+v)."""
    replacements: tuple[Replacement, ...] | None = None
    """Applied before the user's own list: ``spoken -> written`` pairs, ``;`` between."""
    vocabulary: tuple[str, ...] | None = None
    """Words recognition favours in the app, beside the user's own list."""

    def matches(self, app: AppIdentity) -> bool:
        if not self.apps and not self.titles:
            return False
        names_ok = not self.apps or any(_match(p, n) for p in self.apps for n in app.names)
        title_ok = not self.titles or any(_match(p, app.title.lower()) for p in self.titles)
        return names_ok and title_ok

    def overrides(self) -> dict[str, object]:
        """What it changes, by key name (for the HUD, `status` and the preview)."""
        skip = {"name", "apps", "titles"}
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in skip and getattr(self, f.name) is not None
        }

    def summary(self) -> str:
        """One line: the mode and what it changes."""
        changes = ", ".join(_said(key, value) for key, value in self.overrides().items())
        return f"{self.name} ({changes})" if changes else self.name


def _said(key: str, value: object) -> str:
    words = {
        "output": "output",
        "spoken_punctuation": "spoken punctuation",
        "spoken_commands": "spoken commands",
        "capitals": "capital at the start",
        "period": "full stop at the end",
        "language": "language",
        "cleanup": "clean-up",
        "prompt": "clean-up style",
        "paste": "paste keys",
        "replacements": "replacements",
        "vocabulary": "vocabulary",
    }
    if isinstance(value, bool):
        shown = "on" if value else "off"
    elif key == "replacements" and isinstance(value, tuple):
        shown = "; ".join(f"{r.spoken} -> {r.written}" for r in value)
    elif isinstance(value, tuple):
        shown = ", ".join(str(word) for word in value)
    else:
        shown = str(value)
    return f"{words[key]} {shown}"


def _replacements(value: str) -> tuple[Replacement, ...]:
    lines = "\n".join(part for part in value.split(";") if part.strip())
    if not lines or bad_replacement_lines(lines):
        raise ValueError(f"replace takes spoken -> written pairs split by ';', not {value!r}")
    return parse_replacements(lines)


def _vocabulary(value: str) -> tuple[str, ...]:
    try:
        words = parse_vocabulary(value)
    except BadInputError as exc:
        raise ValueError(str(exc)) from None
    if not words:
        raise ValueError("vocabulary takes words and names split by commas")
    return words


def _match(pattern: str, name: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern)


@dataclass(frozen=True)
class Modes:
    """The modes read from the setting, in order, and why any line was left out."""

    modes: tuple[Mode, ...] = ()
    problems: tuple[str, ...] = field(default=())

    def for_app(self, app: AppIdentity | None) -> Mode | None:
        """The first mode whose patterns match ``app``; None: the settings as they are."""
        if app is None or not (app.names or app.title):
            return None
        return next((mode for mode in self.modes if mode.matches(app)), None)


_BOOL_KEYS = {
    "punctuation": "spoken_punctuation",
    "commands": "spoken_commands",
    "capitals": "capitals",
    "period": "period",
    "cleanup": "cleanup",
}


def parse_modes(text: str) -> Modes:
    """The modes of the setting's text; a line that cannot be read is a problem, not a mode."""
    modes: list[Mode] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            mode = _parse_line(line)
        except ValueError as exc:
            problems.append(f"mode line {number} left out: {exc}")
            continue
        if mode.name in seen:
            problems.append(f"mode line {number} left out: {mode.name!r} is named twice")
            continue
        seen.add(mode.name)
        modes.append(mode)
    return Modes(tuple(modes), tuple(problems))


def _parse_line(line: str) -> Mode:
    name, colon, rest = line.partition(":")
    name = name.strip().lower()
    if not colon or not name or not set(name) <= _NAME_CHARS:
        raise ValueError("it must start with a name (letters, digits, - or _) and a colon")
    values: dict[str, object] = {}
    try:
        pairs = shlex.split(rest)
    except ValueError as exc:  # an unclosed quote
        raise ValueError(f"its quotes do not close ({exc})") from None
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not value:
            raise ValueError(f"{pair!r} is not key=value")
        values.update(_read(key.lower(), value))
    if not values.get("apps") and not values.get("titles"):
        raise ValueError("it names no app= or title= to match")
    return Mode(name, **values)  # type: ignore[arg-type]


def _read(key: str, value: str) -> dict[str, object]:
    if key in ("app", "title"):
        patterns = tuple(p.strip().lower() for p in value.split(",") if p.strip())
        return {"apps" if key == "app" else "titles": patterns}
    if key in _BOOL_KEYS:
        if value.lower() not in ON_OFF:
            raise ValueError(f"{key} takes on or off, not {value!r}")
        return {_BOOL_KEYS[key]: ON_OFF[value.lower()]}
    if key == "output":
        allowed = [TYPE, *(str(m) for m in OutputMethod)]
        if value.lower() not in allowed:
            raise ValueError(f"output takes {', '.join(allowed)}, not {value!r}")
        return {"output": value.lower()}
    if key == "language":
        if not (value.isalpha() and 2 <= len(value) <= 3) and value != "auto":
            raise ValueError(f"language takes a code such as en or de, not {value!r}")
        return {"language": value.lower()}
    if key == "prompt":
        if value.lower() not in PROMPTS:
            raise ValueError(f"prompt takes {', '.join(PROMPTS)}, not {value!r}")
        return {"prompt": value.lower()}
    if key == "paste":
        if value.lower() not in PasteChord.values():
            raise ValueError(f"paste takes {', '.join(PasteChord.values())}, not {value!r}")
        return {"paste": PasteChord(value.lower())}
    if key == "replace":
        return {"replacements": _replacements(value)}
    if key == "vocabulary":
        return {"vocabulary": _vocabulary(value)}
    known = (
        "app, title, output, paste, punctuation, commands, capitals, period, language, "
        "replace, vocabulary, cleanup, prompt"
    )
    raise ValueError(f"{key!r} is not a mode key ({known})")
