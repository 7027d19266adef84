"""Resumable, verified downloads over https (or file://), with the URL policy they share
with the index look-up in `app/voxtray/models/pypi_index.py`.

Standard library only: the downloader runs before any optional package is installed.
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import Message
from pathlib import Path
from typing import IO, Any, Protocol, TypeAlias

from voxtray import __version__
from voxtray.errors import CancelledError, CorruptError, NetworkError, disk_error

ProgressFn: TypeAlias = Callable[[int, int | None], None]
"""Called with (bytes done, total bytes or None when the server does not say)."""
CancelFn: TypeAlias = Callable[[], bool]
"""Asked between chunks; True stops the download, keeping the .part for a resume."""

CHUNK_SIZE = 1 << 20
USER_AGENT = f"voxtray/{__version__}"

NETWORK_ERRORS = (urllib.error.URLError, OSError, http.client.HTTPException)
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")
_UNSATISFIED_RANGE = re.compile(r"bytes\s+\*/(\d+)")


class _Response(Protocol):
    """What this module uses of an HTTP response or a file:// response."""

    @property
    def status(self) -> int | None: ...

    @property
    def headers(self) -> Message: ...

    def read(self, amt: int = ..., /) -> bytes: ...

    def __enter__(self) -> _Response: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def close(self) -> None: ...


class _RangeNotSatisfiable(Exception):
    """HTTP 416 to a resume request; `total` is the server's length when it says."""

    def __init__(self, total: int | None) -> None:
        super().__init__(total)
        self.total = total


# --- URL policy -------------------------------------------------------------------------


def check_url(url: str) -> None:
    """Refuse URLs whose content could be tampered with on the way.

    Args:
        url: The URL about to be fetched.

    Raises:
        NetworkError: Unless the URL is https://, file://, or http:// to a loopback host.
    """
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("https", "file"):
        return
    if scheme == "http" and _is_loopback(parts.hostname):
        return
    raise NetworkError(f"refusing insecure URL {url}: only https:// (or file://) is allowed")


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Applies the URL policy to redirect targets, so https cannot bounce to plain http."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def open_url(url: str, headers: dict[str, str], timeout: float) -> Any:
    handlers: list[urllib.request.BaseHandler] = [_CheckedRedirects()]
    if _is_loopback(urllib.parse.urlsplit(url).hostname):
        # A proxy from the environment must never see (or break) loopback traffic.
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **headers})
    return opener.open(request, timeout=timeout)


def _host(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return parts.hostname or parts.path or url


def network_error(url: str, exc: BaseException, doing: str = "download") -> NetworkError:
    reason: object = exc
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        reason = exc.reason
    text = " ".join(str(reason).split()) or type(reason).__name__
    return NetworkError(f"{doing} from {_host(url)} failed: {text}")


def http_error(url: str, exc: urllib.error.HTTPError, doing: str = "download") -> NetworkError:
    if exc.code in (404, 410):
        return NetworkError(f"not found at {url}")
    return network_error(url, exc, doing)


# --- downloads ----------------------------------------------------------------------------


def download(
    url: str,
    dest: Path,
    *,
    sha256: str | None = None,
    size: int | None = None,
    progress: ProgressFn | None = None,
    timeout: float = 30.0,
    cancel: CancelFn | None = None,
) -> Path:
    """Download `url` to `dest`, resuming an interrupted attempt and verifying the result.

    The bytes go to `dest` + ".part" first, and only a verified file is renamed to `dest`,
    so `dest` is always complete. A failed transfer keeps the .part for the next call.

    Args:
        url: https:// URL, file:// URL, or http:// URL to a loopback host.
        dest: Where the file ends up; its folder is created when missing.
        sha256: Expected hex digest, checked when given.
        size: Expected length in bytes, checked when given.
        progress: Called after every chunk with (bytes done, total or None).
        timeout: Seconds to wait for the server before giving up.
        cancel: Asked between chunks; when it answers True the transfer stops.

    Returns:
        `dest`.

    Raises:
        CancelledError: `cancel` answered True; the .part is kept and the next call resumes.
        NetworkError: Insecure URL, unreachable server, HTTP error or cut connection.
        CorruptError: The file does not have the expected size or sha256.
        DiskError: The file cannot be written.
    """
    check_url(url)
    if _is_complete(dest, sha256, size):
        return dest
    part = dest.with_name(dest.name + ".part")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise disk_error(exc, str(dest.parent)) from exc
    length, digest = _fetch(url, part, size, progress, timeout, cancel, sha256 is not None)
    _verify(part, length, digest, sha256, size)
    try:
        os.replace(part, dest)
    except OSError as exc:
        raise disk_error(exc, str(dest)) from exc
    _discard(_validator_path(part))
    return dest


def _is_complete(dest: Path, sha256: str | None, size: int | None) -> bool:
    # Only a verified download is ever renamed to `dest`, so with nothing to check
    # against, an existing file is taken as complete.
    if not dest.is_file():
        return False
    if size is not None and dest.stat().st_size != size:
        return False
    return sha256 is None or _hash_file(dest).hexdigest() == sha256.lower()


def _fetch(
    url: str,
    part: Path,
    size: int | None,
    progress: ProgressFn | None,
    timeout: float,
    cancel: CancelFn | None = None,
    pinned: bool = True,
) -> tuple[int, str]:
    """Bring `part` up to the whole file; returns its length and sha256 hex digest.

    An unpinned file is resumed only while the server proves it unchanged (If-Range with
    the ETag or Last-Modified of the first attempt); otherwise it starts from zero, so
    two versions are never joined into one file that no hash would catch."""
    start = _usable_part(part, size)
    # A pinned file's hash is checked at the end, so only an unpinned one needs proof.
    validator = _read_validator(part) if start and not pinned else None
    if start and not pinned and validator is None:
        _discard(part)
        start = 0
    if size is not None and start == size and pinned:
        return start, _hash_file(part).hexdigest()
    try:
        response = _open(url, start, timeout, validator)
    except _RangeNotSatisfiable as exc:
        if (pinned or validator) and (exc.total is None or exc.total == start):
            return start, _hash_file(part).hexdigest()
        # The part is longer than the file on the server: it is not a prefix of it.
        _discard(part)
        start = 0
        response = _open(url, start, timeout)
    if start and not pinned and response.status == 206 and validator != _validator(response):
        response.close()  # a server that ignored If-Range and sent another version
        _discard(part)
        start = 0
        response = _open(url, start, timeout)
    with response:
        start = _resume_offset(url, response, start, part)
        if start == 0:
            _write_validator(part, _validator(response))
        end = _expected_end(response, start)
        _check_announced_size(url, end, size, part)
        hasher = _hash_file(part) if start else hashlib.sha256()
        total = size if size is not None else end
        length = _stream(url, response, part, start, hasher, total, progress, cancel)
    if end is not None and length < end:
        raise NetworkError(
            f"download from {_host(url)} stopped after {length} of {end} bytes; run again to resume"
        )
    return length, hasher.hexdigest()


def _usable_part(part: Path, size: int | None) -> int:
    """Bytes already in `part` that a resume can build on."""
    try:
        have = part.stat().st_size
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise disk_error(exc, str(part)) from exc
    if size is not None and have > size:
        _discard(part)
        return 0
    return have


def _open(url: str, start: int, timeout: float, validator: str | None = None) -> _Response:
    headers = {"Accept-Encoding": "identity"}
    if start:
        headers["Range"] = f"bytes={start}-"
        if validator is not None:
            headers["If-Range"] = validator
    try:
        response: _Response = open_url(url, headers, timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and start:
            match = _UNSATISFIED_RANGE.fullmatch(exc.headers.get("Content-Range", "").strip())
            raise _RangeNotSatisfiable(int(match.group(1)) if match else None) from exc
        raise http_error(url, exc) from exc
    except NETWORK_ERRORS as exc:
        raise network_error(url, exc) from exc
    return response


def _resume_offset(url: str, response: _Response, start: int, part: Path) -> int:
    """Where the body starts: `start` for a partial answer, 0 when the server sent it all."""
    if not start or response.status != 206:
        return 0  # no Range asked, or the server ignored it: start over
    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    if match is None or int(match.group(1)) != start:
        _discard(part)
        raise NetworkError(f"download from {_host(url)} failed: server sent the wrong range")
    return start


def _expected_end(response: _Response, start: int) -> int | None:
    """Length of the whole file once this body is appended, when the headers tell."""
    length = response.headers.get("Content-Length")
    if length is not None and length.strip().isdigit():
        return start + int(length)
    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    if match is not None and match.group(3) != "*":
        return int(match.group(3))
    return None


def _check_announced_size(url: str, end: int | None, size: int | None, part: Path) -> None:
    # Fail before transferring a large file that cannot be the one we want.
    if end is not None and size is not None and end != size:
        _discard(part)
        raise CorruptError(f"{url} is {end} bytes, expected {size}")


def _stream(
    url: str,
    response: _Response,
    part: Path,
    start: int,
    hasher: hashlib._Hash,
    total: int | None,
    progress: ProgressFn | None,
    cancel: CancelFn | None = None,
) -> int:
    done = start
    with _open_part(part, append=start > 0) as out:
        if progress is not None:
            progress(done, total)
        while not _cancelled(cancel, part, out) and (chunk := _read(url, response)):
            try:
                out.write(chunk)
            except OSError as exc:
                raise disk_error(exc, str(part)) from exc
            hasher.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return done


def _cancelled(cancel: CancelFn | None, part: Path, out: IO[bytes]) -> bool:
    if cancel is None or not cancel():
        return False
    try:
        out.flush()
    except OSError as exc:
        raise disk_error(exc, str(part)) from exc
    raise CancelledError(f"download of {part.name[: -len('.part')]} cancelled; run again to resume")


def _read(url: str, response: _Response) -> bytes:
    try:
        return response.read(CHUNK_SIZE)
    except NETWORK_ERRORS as exc:
        raise network_error(url, exc) from exc


@contextmanager
def _open_part(part: Path, *, append: bool) -> Iterator[IO[bytes]]:
    """The .part file for writing, flushed to disk on a clean exit so the rename is durable."""
    try:
        out = part.open("ab" if append else "wb")
    except OSError as exc:
        raise disk_error(exc, str(part)) from exc
    with out:
        yield out
        try:
            out.flush()
            os.fsync(out.fileno())
        except OSError as exc:
            raise disk_error(exc, str(part)) from exc


def _verify(part: Path, length: int, digest: str, sha256: str | None, size: int | None) -> None:
    if size is not None and length != size:
        _discard(part)
        raise CorruptError(f"download of {part.name} has {length} bytes, expected {size}")
    if sha256 is not None and digest != sha256.lower():
        _discard(part)
        raise CorruptError(
            f"sha256 mismatch for {part.name}: expected {sha256.lower()[:16]}…, got {digest[:16]}…"
        )


def _hash_file(path: Path) -> hashlib._Hash:
    hasher = hashlib.sha256()
    try:
        with path.open("rb") as src:
            while chunk := src.read(CHUNK_SIZE):
                hasher.update(chunk)
    except OSError as exc:
        raise disk_error(exc, str(path)) from exc
    return hasher


def _validator_path(part: Path) -> Path:
    return part.with_name(part.name + ".validator")


def _validator(response: _Response) -> str | None:
    """What identifies this version of the file: a strong ETag, else Last-Modified."""
    etag = (response.headers.get("ETag") or "").strip()
    if etag and not etag.startswith("W/"):
        return etag
    return (response.headers.get("Last-Modified") or "").strip() or None


def _read_validator(part: Path) -> str | None:
    try:
        return _validator_path(part).read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _write_validator(part: Path, validator: str | None) -> None:
    path = _validator_path(part)
    try:
        if validator is None or not validator.isascii() or not validator.isprintable():
            path.unlink(missing_ok=True)
        else:
            path.write_text(validator, encoding="ascii")
    except OSError as exc:
        raise disk_error(exc, str(path)) from exc


def _discard(path: Path) -> None:
    """Delete `path` (with its validator when it is a .part)."""
    paths = [path, _validator_path(path)] if path.name.endswith(".part") else [path]
    for each in paths:
        try:
            each.unlink(missing_ok=True)
        except OSError as exc:
            raise disk_error(exc, str(each)) from exc
