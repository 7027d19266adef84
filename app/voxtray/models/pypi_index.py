"""Wheel look-ups on a PyPI "simple" index (PEP 503 HTML or PEP 691 JSON pages).

Standard library only, like the downloader it feeds.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from voxtray.errors import CorruptError, NotFoundError
from voxtray.models.download import NETWORK_ERRORS, check_url, http_error, network_error, open_url

DEFAULT_INDEX = "https://pypi.org/simple"
INDEX_ENV = "VOXTRAY_PYPI_INDEX"
SIMPLE_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"


@dataclass(frozen=True)
class WheelLink:
    """One wheel file on an index, with what the index says about it."""

    filename: str
    url: str
    sha256: str | None
    size: int | None


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
        with open_url(url, {"Accept": SIMPLE_ACCEPT}, timeout) as response:
            body: bytes = response.read()
            content_type = response.headers.get("Content-Type", "")
            final_url: str = response.geturl()
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code in (404, 410):
            return None
        raise http_error(url, exc, "index request") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, FileNotFoundError):
            return None
        raise network_error(url, exc, "index request") from exc
    except NETWORK_ERRORS as exc:
        raise network_error(url, exc, "index request") from exc
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
