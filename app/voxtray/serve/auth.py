"""The server's API key: generated on first start, kept 0600 under the data folder."""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from voxtray.errors import disk_error
from voxtray.paths import data_home


def token_path() -> Path:
    return data_home() / "serve" / "api-key"


def load_or_create_token(path: Path | None = None) -> tuple[str, bool]:
    """The stored key, or a new one written with mode 0600; True when it was just made."""
    path = path or token_path()
    try:
        existing = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        existing = ""
    except OSError as exc:
        raise disk_error(exc, str(path)) from None
    if existing:
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        return existing, False
    token = "vx-" + secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as stream:
            stream.write(token + "\n")
    except OSError as exc:
        raise disk_error(exc, str(path)) from None
    return token, True


def authorized(header: str | None, token: str | None) -> bool:
    """True when `header` is `Bearer <token>` (or no token is required)."""
    if token is None:
        return True
    if not header or not header.lower().startswith("bearer "):
        return False
    return hmac.compare_digest(header[7:].strip().encode(), token.encode())
