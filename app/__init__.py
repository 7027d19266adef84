"""Voxtray: push-to-talk dictation with local speech-to-text."""

__version__ = "0.1.0"
