"""Trust on first use for downloads the catalog pins no hash for.

When a user accepts such a download, the sha256 and size of what arrived, and of every file
unpacked from it, are recorded in `<store>/trusted.json`. Every later download of the same
URL, and every `voxtray models verify`, is checked against that record, so the bytes can
change only with the user's knowledge. The file is replaced atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voxtray.errors import CorruptError, disk_error

TRUST_FILE = "trusted.json"
_FORMAT = 1


@dataclass(frozen=True)
class TrustRecord:
    """What arrived the first time a user accepted an unpinned download."""

    url: str
    model: str
    sha256: str
    size: int
    files: dict[str, str]
    trusted_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "sha256": self.sha256,
            "size": self.size,
            "files": self.files,
            "trusted_at": self.trusted_at,
        }


class TrustStore:
    """The trust records of one model store, keyed by download URL."""

    def __init__(self, root: Path) -> None:
        self.path = root / TRUST_FILE

    def get(self, url: str) -> TrustRecord | None:
        entry = self._read().get(url)
        if entry is None:
            return None
        try:
            return TrustRecord(
                url=url,
                model=str(entry["model"]),
                sha256=str(entry["sha256"]),
                size=int(entry["size"]),
                files={str(k): str(v) for k, v in entry.get("files", {}).items()},
                trusted_at=str(entry.get("trusted_at", "")),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            raise self._corrupt("has a malformed record") from None

    def for_model(self, model: str) -> TrustRecord | None:
        for url, entry in self._read().items():
            if isinstance(entry, dict) and entry.get("model") == model:
                return self.get(url)
        return None

    def record(
        self, url: str, model: str, sha256: str, size: int, files: dict[str, str]
    ) -> TrustRecord:
        """Remember what arrived; an existing record for `url` is only ever replaced by an
        identical archive hash (a different one is refused before this is called)."""
        record = TrustRecord(
            url=url,
            model=model,
            sha256=sha256,
            size=size,
            files=dict(sorted(files.items())),
            trusted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        entries = self._read()
        entries[url] = record.to_json()
        self._write(entries)
        return record

    def _read(self) -> dict[str, Any]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            raise self._corrupt("is unreadable") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("archives"), dict):
            raise self._corrupt("is not a trust file")
        archives: dict[str, Any] = raw["archives"]
        return archives

    def _write(self, entries: dict[str, Any]) -> None:
        text = json.dumps({"format": _FORMAT, "archives": entries}, indent=2) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".trusted-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise disk_error(exc, str(self.path)) from exc

    def _corrupt(self, what: str) -> CorruptError:
        return CorruptError(
            f"{self.path} {what}; it records the hashes of downloads you trusted, "
            "so fix or delete it by hand"
        )
