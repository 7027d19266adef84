"""The clean-up endpoint's API key, kept as the remote engine's is: out of settings.json,
in the desktop keyring or a 0600 file of its own under the data folder."""

from __future__ import annotations

from pathlib import Path

from voxtray.inference.remote_key import ApiKeyStore
from voxtray.paths import data_home

ACCOUNT = "cleanup-api-key"
KEY_FILE = "cleanup-api-key"


def cleanup_key_store(path: Path | None = None) -> ApiKeyStore:
    return ApiKeyStore(path or data_home() / KEY_FILE, account=ACCOUNT)
