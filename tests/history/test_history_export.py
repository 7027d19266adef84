"""Writing an export: only to a regular file or a new path, through a synced temporary
file renamed over it, and a failed write reported as what it was. Real FIFOs, a real
full device, real links and a real full tmpfs."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.disks import fill, tmpfs
from voxtray.errors import BadInputError, DiskError
from voxtray.history.export import write_export

TEXT = "Send the report to Anneliese\n"


def _leftovers(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


@pytest.fixture
def full_device(tmp_path: Path) -> Path:
    """The full device (char 1:7, what /dev/full is). As root, a node of its own in a
    temporary folder, so a test run against a writer that replaces it cannot replace the
    system's; without root, /dev/full itself, which then cannot be replaced."""
    node = tmp_path / "full"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except PermissionError:
        return Path("/dev/full")
    return node


def test_a_new_file_and_a_regular_file_are_written(tmp_path: Path) -> None:
    new = tmp_path / "out" / "dictations.txt"
    assert write_export(new, TEXT) == new
    assert new.read_text(encoding="utf-8") == TEXT
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    new.chmod(0o644)
    write_export(new, "replaced\n")
    assert new.read_text(encoding="utf-8") == "replaced\n"
    assert stat.S_IMODE(new.stat().st_mode) == 0o644  # its mode is kept
    assert _leftovers(new.parent) == []


def test_the_full_device_is_refused_and_stays_a_device(full_device: Path) -> None:
    with pytest.raises(BadInputError, match="is a device, not a regular file"):
        write_export(full_device, TEXT)
    assert stat.S_ISCHR(os.lstat(full_device).st_mode)


def test_a_fifo_is_refused_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "dictations.txt"
    os.mkfifo(fifo)
    with pytest.raises(BadInputError, match="is a FIFO"):
        write_export(fifo, TEXT)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _leftovers(tmp_path) == []


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="is a folder"):
        write_export(tmp_path, TEXT)


def test_a_link_to_a_file_writes_the_file_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "notes" / "dictations.txt"
    real.parent.mkdir()
    real.write_text("old\n", encoding="utf-8")
    link = tmp_path / "latest.txt"
    link.symlink_to(real)
    assert write_export(link, TEXT) == real
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == TEXT
    assert _leftovers(real.parent) == []


@pytest.mark.parametrize("kind", ["fifo", "device", "nothing"])
def test_a_link_to_what_is_not_a_file_is_refused(
    tmp_path: Path, full_device: Path, kind: str
) -> None:
    target = {"fifo": tmp_path / "fifo", "device": full_device, "nothing": tmp_path / "gone"}
    if kind == "fifo":
        os.mkfifo(target[kind])
    link = tmp_path / "link.txt"
    link.symlink_to(target[kind])
    with pytest.raises(BadInputError, match="cannot export to"):
        write_export(link, TEXT)
    assert link.is_symlink()
    assert not target["nothing"].exists()
    if kind != "nothing":
        assert not stat.S_ISREG(os.stat(target[kind]).st_mode)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "tmpfs", "256k") as mount_point:
        yield mount_point


def test_a_full_disk_is_reported_and_the_old_export_kept(small_tmpfs: Path) -> None:
    path = small_tmpfs / "dictations.txt"
    write_export(path, TEXT)
    fill(small_tmpfs)
    with pytest.raises(DiskError, match="No space left on device"):
        write_export(path, "x" * 100_000)
    assert path.read_text(encoding="utf-8") == TEXT
    assert _leftovers(small_tmpfs) == []
