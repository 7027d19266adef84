"""Resumable, verified downloads and wheel look-ups on a PyPI "simple" index.

Standard library only: the downloader runs before any optional package is installed.
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from html.parser import HTMLParser
from pathlib import Path
from typing import IO, Any, Protocol, TypeAlias

from app import __version__
from app.errors import CancelledError, CorruptError, NetworkError, NotFoundError, disk_error

ProgressFn: TypeAlias = Callable[[int, int | None], None]
"""Called with (bytes done, total bytes or None when the server does not say)."""
CancelFn: TypeAlias = Callable[[], bool]
"""Asked between chunks; True stops the download, keeping the .part for a resume."""

CHUNK_SIZE = 1 << 20
USER_AGENT = f"voxtray/{__version__}"
DEFAULT_INDEX = "https://pypi.org/simple"
INDEX_ENV = "VOXTRAY_PYPI_INDEX"
SIMPLE_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"

_NETWORK_ERRORS = (urllib.error.URLError, OSError, http.client.HTTPException)
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


class _RangeNotSatisfiable(Exception):
    """HTTP 416 to a resume request; `total` is the server's length when it says."""

    def __init__(self, total: int | None) -> None:
        super().__init__(total)
        self.total = total


@dataclass(frozen=True)
class WheelLink:
    """One wheel file on an index, with what the index says about it."""

    filename: str
    url: str
    sha256: str | None
    size: int | None


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


def _urlopen(url: str, headers: dict[str, str], timeout: float) -> Any:
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


def _network_error(url: str, exc: BaseException, doing: str = "download") -> NetworkError:
    reason: object = exc
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        reason = exc.reason
    text = " ".join(str(reason).split()) or type(reason).__name__
    return NetworkError(f"{doing} from {_host(url)} failed: {text}")


def _http_error(url: str, exc: urllib.error.HTTPError, doing: str = "download") -> NetworkError:
    if exc.code in (404, 410):
        return NetworkError(f"not found at {url}")
    return _network_error(url, exc, doing)


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
    length, digest = _fetch(url, part, size, progress, timeout, cancel)
    _verify(part, length, digest, sha256, size)
    try:
        os.replace(part, dest)
    except OSError as exc:
        raise disk_error(exc, str(dest)) from exc
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
) -> tuple[int, str]:
    """Bring `part` up to the whole file; returns its length and sha256 hex digest."""
    start = _usable_part(part, size)
    if size is not None and start == size:
        return start, _hash_file(part).hexdigest()
    try:
        response = _open(url, start, timeout)
    except _RangeNotSatisfiable as exc:
        if exc.total is None or exc.total == start:
            return start, _hash_file(part).hexdigest()
        # The part is longer than the file on the server: it is not a prefix of it.
        _discard(part)
        start = 0
        response = _open(url, start, timeout)
    with response:
        start = _resume_offset(url, response, start, part)
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


def _open(url: str, start: int, timeout: float) -> _Response:
    headers = {"Accept-Encoding": "identity"}
    if start:
        headers["Range"] = f"bytes={start}-"
    try:
        response: _Response = _urlopen(url, headers, timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and start:
            match = _UNSATISFIED_RANGE.fullmatch(exc.headers.get("Content-Range", "").strip())
            raise _RangeNotSatisfiable(int(match.group(1)) if match else None) from exc
        raise _http_error(url, exc) from exc
    except _NETWORK_ERRORS as exc:
        raise _network_error(url, exc) from exc
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
    except _NETWORK_ERRORS as exc:
        raise _network_error(url, exc) from exc


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


def _discard(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise disk_error(exc, str(path)) from exc


# --- wheel look-up on a simple index -------------------------------------------------------


def normalize_name(name: str) -> str:
    """The PEP 503 form of a project name: lower case, runs of "-", "_", "." become "-".

    Args:
        name: A project name as written anywhere.

    Returns:
        The normalised name, e.g. "silero-vad" for "Silero_VAD".
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def resolve_wheel(
    package: str,
    version: str,
    filename: str | None = None,
    index_url: str | None = None,
    timeout: float = 30.0,
) -> WheelLink:
    """Find the wheel of `package==version` on a PEP 503 / PEP 691 simple index.

    Args:
        package: Project name in any spelling.
        version: Exact version string, as in the wheel's file name.
        filename: The wheel's file name, to choose among several; otherwise a pure-Python
            wheel is preferred, else the first one listed.
        index_url: The index; defaults to $VOXTRAY_PYPI_INDEX, $PIP_INDEX_URL, then PyPI.
        timeout: Seconds to wait for the index.

    Returns:
        The wheel's name, absolute URL, sha256 and size (the last two when listed).

    Raises:
        NotFoundError: The index has no such project, version or file.
        NetworkError: The index cannot be reached or its URL is insecure.
        CorruptError: The index answered something that is not an index page.
    """
    index = (
        index_url or os.environ.get(INDEX_ENV) or os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX
    )
    name = normalize_name(package)
    not_found = NotFoundError(f"package {package}=={version} has no wheel on {index}")
    page_url = f"{index.rstrip('/')}/{name}/"
    check_url(page_url)
    page = _get_index_page(page_url, timeout)
    if page is None:
        raise not_found
    links = _parse_index_page(*page)
    link = _pick_wheel(links, name, version, filename)
    if link is None:
        raise not_found
    return link


def _get_index_page(page_url: str, timeout: float) -> tuple[bytes, str, str] | None:
    """(body, content type, final URL) of an index page; None when the project is unknown."""
    url = page_url
    if urllib.parse.urlsplit(url).scheme == "file":
        url += "index.html"  # a mirror on disk keeps each page as a folder's index.html
    try:
        with _urlopen(url, {"Accept": SIMPLE_ACCEPT}, timeout) as response:
            body: bytes = response.read()
            content_type = response.headers.get("Content-Type", "")
            final_url: str = response.geturl()
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code in (404, 410):
            return None
        raise _http_error(url, exc, "index request") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, FileNotFoundError):
            return None
        raise _network_error(url, exc, "index request") from exc
    except _NETWORK_ERRORS as exc:
        raise _network_error(url, exc, "index request") from exc
    return body, content_type, final_url


def _parse_index_page(body: bytes, content_type: str, page_url: str) -> list[WheelLink]:
    if "json" in content_type.lower():
        return _parse_json_page(body, page_url)
    return _parse_html_page(body.decode("utf-8", errors="replace"), page_url)


def _parse_json_page(body: bytes, page_url: str) -> list[WheelLink]:
    try:
        files = json.loads(body)["files"]
        return [_json_link(entry, page_url) for entry in files]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptError(f"index page {page_url} is not a PEP 691 project page") from exc


def _json_link(entry: dict[str, Any], page_url: str) -> WheelLink:
    size = entry.get("size")
    sha256 = (entry.get("hashes") or {}).get("sha256")
    return WheelLink(
        filename=str(entry["filename"]),
        url=urllib.parse.urljoin(page_url, str(entry["url"])),
        sha256=str(sha256).lower() if sha256 else None,
        size=size if isinstance(size, int) else None,
    )


class _AnchorParser(HTMLParser):
    """Collects (href, text) of every anchor, honouring a <base href>."""

    def __init__(self, page_url: str) -> None:
        super().__init__()
        self.base = page_url
        self.anchors: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "base" and href:
            self.base = urllib.parse.urljoin(self.base, href)
        elif tag == "a" and href:
            self._href, self._text = urllib.parse.urljoin(self.base, href), []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.anchors.append((self._href, "".join(self._text).strip()))
            self._href = None


def _parse_html_page(html: str, page_url: str) -> list[WheelLink]:
    parser = _AnchorParser(page_url)
    parser.feed(html)
    parser.close()
    links = []
    for href, text in parser.anchors:
        url, fragment = urllib.parse.urldefrag(href)
        name = text or urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
        hashes = urllib.parse.parse_qs(fragment)
        sha256 = hashes["sha256"][0].lower() if "sha256" in hashes else None
        links.append(WheelLink(filename=name, url=url, sha256=sha256, size=None))
    return links


def _pick_wheel(
    links: list[WheelLink], name: str, version: str, filename: str | None
) -> WheelLink | None:
    if filename is not None:
        return next((link for link in links if link.filename == filename), None)
    wheels = [link for link in links if _is_wheel_of(link.filename, name, version)]
    pure = [link for link in wheels if link.filename.endswith("-none-any.whl")]
    candidates = pure or wheels
    return candidates[0] if candidates else None


def _is_wheel_of(filename: str, name: str, version: str) -> bool:
    # {distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl; old wheels may
    # spell the distribution unnormalised, so compare normalised forms.
    parts = filename.split("-")
    return (
        filename.endswith(".whl")
        and len(parts) >= 5
        and normalize_name(parts[0]) == name
        and parts[1] == version
    )
