"""The model store's refusals, as facts: each front end adds its own way out (a flag, a
button), which the store does not name."""

from __future__ import annotations

from voxtray.errors import ExitCode, NotFoundError, VoxtrayError

REFUSED_UNTRUSTED = "refusing until it is trusted"
"""How an `UnpinnedError` ends; each front end adds how to trust the download."""


class UnpinnedError(VoxtrayError):
    """The catalog pins no hash for a download and the user has not accepted it yet."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, model: str = "", url: str = "") -> None:
        super().__init__(message)
        self.model = model
        self.url = url


class NotInstalledError(NotFoundError):
    """A catalog model that is not installed; installing it is the way out."""

    def __init__(self, model: str) -> None:
        super().__init__(f"model {model} is not installed")
        self.model = model
