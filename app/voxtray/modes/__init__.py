"""Modes: named sets of overrides (how to type, punctuation, capitals, language, clean-up)
that the app in focus chooses. `rules` reads them from the `modes` setting."""

from voxtray.modes.rules import DEFAULT_MODES, AppIdentity, Mode, Modes, parse_modes

__all__ = ["DEFAULT_MODES", "AppIdentity", "Mode", "Modes", "parse_modes"]
