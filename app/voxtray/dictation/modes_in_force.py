"""The mode the window at the press chooses, and what it changes for that dictation: the
text options, the clean-up and the output (an output a mode asks for is made once and
kept). A mode's output that cannot work here is said once; the loaded output types then."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxtray.choices import PasteChord
from voxtray.config import Settings
from voxtray.desktop.session import Desktop
from voxtray.dictation.cleaning import cleaner_of
from voxtray.dictation.loaded import Loaded
from voxtray.errors import VoxtrayError, first_line
from voxtray.inference.pipeline import NOTHING_ASKED, TakeAsks
from voxtray.modes import AppIdentity, Mode
from voxtray.modes.rules import TYPE
from voxtray.text.postprocess import TextOptions
from voxtray.text.vocabulary import parse_vocabulary

if TYPE_CHECKING:
    from voxtray.cleanup import Cleaner
    from voxtray.output.base import TextOutput
    from voxtray.output.target import FocusTarget
    from voxtray.output.verify import Field

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InForce:
    """One dictation's mode (None: the settings as they are) and what it makes of them."""

    mode: Mode | None
    output: TextOutput
    options: TextOptions
    cleaner: Cleaner | None

    @property
    def name(self) -> str | None:
        return None if self.mode is None else self.mode.name


def identity(target: FocusTarget | None, found: Field | None = None) -> AppIdentity | None:
    """What the desktop told of the window's app: X11's WM_CLASS and sway's app_id, else
    (GNOME, KDE) the accessibility bus's name of the application with the focus."""
    if target is not None and (target.app_names or target.title):
        return AppIdentity(target.app_names, target.title)
    if found is not None and found.widget is not None and found.widget.app:
        return AppIdentity((found.widget.app.lower(),))
    return None


def text_options(mode: Mode, options: TextOptions) -> TextOptions:
    def pick(value: bool | None, kept: bool) -> bool:
        return kept if value is None else value

    if mode.replacements is not None:  # the mode's first; the user's after, if on
        kept = options.replacements if options.use_replacements else ()
        options = dataclasses.replace(
            options, use_replacements=True, replacements=(*mode.replacements, *kept)
        )
    return dataclasses.replace(
        options,
        spoken_punctuation=pick(mode.spoken_punctuation, options.spoken_punctuation),
        spoken_commands=pick(mode.spoken_commands, options.spoken_commands),
        capitals=pick(mode.capitals, options.capitals),
        period=pick(mode.period, options.period),
        language=options.language if mode.language is None else mode.language,
    )


def cleanup_settings(mode: Mode, settings: Settings) -> Settings:
    """The settings clean-up reads, as the mode changes them."""
    enabled = settings.cleanup_enabled if mode.cleanup is None else mode.cleanup
    prompt = settings.cleanup_prompt if mode.prompt is None else mode.prompt
    return settings.replace(cleanup_enabled=enabled, cleanup_prompt=prompt)


class ModeOutputs:
    """The outputs modes ask for, made on first use by ``make`` (an output name) and kept
    by name and paste keys; a mode's paste keys get an output of their own, so the loaded
    one keeps its keys."""

    def __init__(self, make: Callable[[str], TextOutput], warn: Callable[[str], None]) -> None:
        self._make = make
        self._warn = warn
        self._made: dict[tuple[str, PasteChord | None], TextOutput | None] = {}

    def for_mode(
        self, mode: Mode, loaded: TextOutput, loaded_as: str, target: FocusTarget | None
    ) -> TextOutput:
        """The output the mode names (`TYPE`: one that never pastes), or the ``loaded``
        one (made as ``loaded_as``), pasting with the mode's keys."""
        method = self._method(mode.output, target)
        if method is None and mode.paste is not None:
            method = loaded_as
        if method is None:  # not by name: auto's wtype pastes long text, `wtype` never does
            return loaded
        key = (method, mode.paste)
        if key not in self._made:
            self._made[key] = self._made_for(method, mode.paste)
        return self._made[key] or loaded

    def close(self) -> None:
        """End what the outputs made for modes hold open."""
        from voxtray.output.base import close_output

        for output in self._made.values():
            close_output(output)
        self._made.clear()

    def _made_for(self, method: str, paste: PasteChord | None) -> TextOutput | None:
        from voxtray.output.chooser import paste_with  # every backend: only when a mode asks

        try:
            output = self._make(method)
        except VoxtrayError as exc:
            self._warn(f"a mode's output {method} cannot type here: {first_line(exc)}")
            return None
        if paste is not None and not paste_with(output, paste):
            self._warn(f"a mode's paste keys {paste} do nothing with output {method}: it types")
        return output

    @staticmethod
    def _method(wanted: str | None, target: FocusTarget | None) -> str | None:
        if wanted != TYPE:
            return wanted
        # wtype pastes long text unless asked for by name; the others type (xdotool), or
        # paste with shift+Insert, which terminals take (the desktop portal's keyboard).
        virtual_keyboard = {Desktop.SWAY, Desktop.HYPRLAND}  # where wtype's keyboard types
        here = set(target.session.desktops) if target is not None else set()
        return "wtype" if virtual_keyboard & here else None


def asks_in_force(loaded: Loaded, target: FocusTarget | None, found: Field | None) -> TakeAsks:
    """What recognition in the window's app asks beyond the loaded settings: the mode's
    words after the user's list, and the mode's language."""
    mode = loaded.modes.for_app(identity(target, found))
    if mode is None:
        return NOTHING_ASKED
    words: tuple[str, ...] = ()
    if mode.vocabulary:
        own = parse_vocabulary(loaded.settings.vocabulary)
        words = tuple(dict.fromkeys((*own, *mode.vocabulary)))
    return TakeAsks(words, mode.language)


def in_force(
    loaded: Loaded, target: FocusTarget | None, found: Field | None, outputs: ModeOutputs
) -> InForce:
    """What the dictation into ``target`` (and the focus the accessibility bus ``found``)
    uses: the ``loaded`` output, text options and cleaner, as the mode the window's app
    chooses changes them."""
    app = identity(target, found)
    mode = loaded.modes.for_app(app)
    if mode is None:
        return InForce(None, loaded.output, loaded.text_options, loaded.cleaner)
    cleaner = loaded.cleaner
    if mode.cleanup is not None or mode.prompt is not None:
        cleaner = cleaner_of(cleanup_settings(mode, loaded.settings))
    chosen = outputs.for_mode(mode, loaded.output, str(loaded.settings.output), target)
    log.info("mode %s for %s", mode.name, app.shown if app else "")
    return InForce(mode, chosen, text_options(mode, loaded.text_options), cleaner)
