"""Voxtray: push-to-talk dictation with local speech-to-text."""

__version__ = "0.1.0"

HOME_ENV = "VOXTRAY_HOME"
"""The environment variable that moves all of Voxtray's data (settings, models, history)."""
