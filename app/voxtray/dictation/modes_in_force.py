"""The mode the window at the press chooses, and what it changes for that dictation: the
text options, the clean-up and the output (an output a mode asks for is made once and
kept). A mode's output that cannot work here is said once; the loaded output types then."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxtray.config import Settings
from voxtray.desktop.session import Desktop
from voxtray.dictation.cleaning import cleaner_of
from voxtray.dictation.loaded import Loaded
from voxtray.errors import VoxtrayError, first_line
from voxtray.modes import AppIdentity, Mode
from voxtray.modes.rules import TYPE
from voxtray.text.postprocess import TextOptions

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
    """The outputs modes ask for, made on first use by ``make`` (an output name)."""

    def __init__(self, make: Callable[[str], TextOutput], warn: Callable[[str], None]) -> None:
        self._make = make
        self._warn = warn
        self._made: dict[str, TextOutput | None] = {}

    def for_mode(
        self, wanted: str | None, loaded: TextOutput, target: FocusTarget | None
    ) -> TextOutput:
        """The output ``wanted`` names (`TYPE`: one that never pastes), or ``loaded``."""
        method = self._method(wanted, target)
        if method is None:  # not by name: auto's wtype pastes long text, `wtype` never does
            return loaded
        if method not in self._made:
            try:
                self._made[method] = self._make(method)
            except VoxtrayError as exc:
                self._warn(f"a mode's output {method} cannot type here: {first_line(exc)}")
                self._made[method] = None
        return self._made[method] or loaded

    @staticmethod
    def _method(wanted: str | None, target: FocusTarget | None) -> str | None:
        if wanted != TYPE:
            return wanted
        # wtype pastes long text unless asked for by name; the others type (xdotool), or
        # paste with shift+Insert, which terminals take (the desktop portal's keyboard).
        on_sway = target is not None and Desktop.SWAY in target.session.desktops
        return "wtype" if on_sway else None


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
    chosen = outputs.for_mode(mode.output, loaded.output, target)
    log.info("mode %s for %s", mode.name, app.shown if app else "")
    return InForce(mode, chosen, text_options(mode, loaded.text_options), cleaner)
