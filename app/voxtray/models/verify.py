"""Checks of installed files against the sizes and sha256 recorded at install."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class FileProblem:
    path: str
    problem: str  # "missing", "truncated", "size", "sha256"
    detail: str


@dataclass
class VerifyReport:
    name: str
    installed: bool
    problems: list[FileProblem] = field(default_factory=list)
    files_checked: int = 0
    stale: bool = False

    @property
    def ok(self) -> bool:
        return self.installed and not self.problems


def check_file(path: Path, rel: str, size: int, sha256: str) -> FileProblem | None:
    if not path.is_file():
        return FileProblem(rel, "missing", "is missing")
    actual_size = path.stat().st_size
    if actual_size < size:
        return FileProblem(rel, "truncated", f"is truncated ({actual_size} of {size} bytes)")
    if actual_size != size:
        return FileProblem(rel, "size", f"has {actual_size} bytes, expected {size}")
    actual = sha256_file(path)
    if actual != sha256:
        return FileProblem(
            rel, "sha256", f"is corrupted (sha256 {actual[:12]}... != {sha256[:12]}...)"
        )
    return None
