"""The remote server's API key, kept out of settings.json: in the desktop's keyring where
one is running (the optional `keyring` package with a real backend), otherwise in a 0600
file under the data folder, written atomically."""

from __future__ import annotations

import contextlib
import importlib
from pathlib import Path
from typing import Any

from voxtray.errors import VoxtrayError, disk_error, first_line
from voxtray.fileio import atomic_write
from voxtray.paths import data_home

SERVICE = "voxtray"
ACCOUNT = "remote-api-key"
KEY_FILE = "remote-api-key"


def key_file() -> Path:
    return data_home() / KEY_FILE


def desktop_keyring() -> Any | None:
    """The `keyring` module when it has a usable backend, else None."""
    try:
        keyring = importlib.import_module("keyring")
        backend = keyring.get_keyring()
    except Exception:  # not installed, or a backend that fails to load
        return None
    kind = f"{type(backend).__module__}.{type(backend).__name__}".lower()
    if "fail" in kind or "null" in kind or getattr(backend, "priority", 1) <= 0:
        return None
    return keyring


class ApiKeyStore:
    """Where the remote server's API key lives; `where` names it for the UI.

    Args:
        path: The fallback file (default: `remote-api-key` in the data folder).
        keyring: The keyring module to use; by default the desktop's, if any. Pass None
            to use only the file.
        account: The keyring entry's name: one per server the key is for.
    """

    _AUTO: Any = object()

    def __init__(
        self, path: Path | None = None, keyring: Any = _AUTO, account: str = ACCOUNT
    ) -> None:
        self.path = path or key_file()
        self.keyring = desktop_keyring() if keyring is ApiKeyStore._AUTO else keyring
        self.account = account

    @property
    def where(self) -> str:
        return "the desktop keyring" if self.keyring is not None else str(self.path)

    def get(self) -> str:
        """The stored key, or "" when none is stored (or the keyring cannot be read)."""
        if self.keyring is not None:
            try:
                return str(self.keyring.get_password(SERVICE, self.account) or "")
            except Exception:  # a locked or vanished keyring: behave as if none is stored
                return ""
        try:
            return self.path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise disk_error(exc, str(self.path)) from None

    def set(self, key: str) -> None:
        """Store `key`; an empty key removes the stored one.

        Raises:
            DiskError: the file cannot be written (the old one is then intact).
            VoxtrayError: the keyring refused it.
        """
        key = key.strip()
        if not key:
            self.delete()
            return
        if self.keyring is not None:
            try:
                self.keyring.set_password(SERVICE, self.account, key)
            except Exception as exc:
                raise VoxtrayError(f"the keyring refused the API key: {first_line(exc)}") from None
            self.path.unlink(missing_ok=True)  # no stale copy left behind on disk
            return
        try:
            atomic_write(self.path, (key + "\n").encode("utf-8"), 0o600)
        except OSError as exc:
            raise disk_error(exc, str(self.path)) from None

    def delete(self) -> None:
        if self.keyring is not None:
            with contextlib.suppress(Exception):  # nothing was stored
                self.keyring.delete_password(SERVICE, self.account)
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            raise disk_error(exc, str(self.path)) from None
