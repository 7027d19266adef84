"""The model store against a local HTTP server that changes a file between attempts,
installs of one model run side by side, installs killed half way, and catalog names
that try to leave the models folder."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.support.http import FakeServer
from tests.support.store import Setup
from voxtray.errors import CorruptError, NetworkError, VoxtrayError
from voxtray.models.catalog import load_catalog
from voxtray.models.download import download
from voxtray.models.store import ModelStore

pytestmark = [pytest.mark.faults, pytest.mark.hostile]

OLD, NEW = os.urandom(300_000), os.urandom(300_000)
CUT = 100_000


def _cut_then_changed(fake: FakeServer, tmp_path: Path) -> Path:
    """A first attempt cut after CUT bytes of OLD; then the server holds NEW."""
    url = fake.serve("/unpinned.bin", OLD)
    dest = tmp_path / "unpinned.bin"
    fake.cut_after = CUT
    with pytest.raises(NetworkError, match="resume"):
        download(url, dest)
    assert (tmp_path / "unpinned.bin.part").read_bytes() == OLD[:CUT]
    fake.serve("/unpinned.bin", NEW)
    return dest


def test_changed_file_is_fetched_whole_through_if_range(
    server: FakeServer,
    tmp_path: Path,
) -> None:
    dest = _cut_then_changed(server, tmp_path)
    download(server.url("/unpinned.bin"), dest)
    assert dest.read_bytes() == NEW
    assert not list(tmp_path.glob("*.part*"))


def test_changed_file_from_a_server_ignoring_if_range_starts_over(
    server: FakeServer,
    tmp_path: Path,
) -> None:
    dest = _cut_then_changed(server, tmp_path)
    server.ignore_if_range = True
    download(server.url("/unpinned.bin"), dest)
    assert dest.read_bytes() == NEW
    assert [r.range for r in server.requests] == [None, f"bytes={CUT}-", None]


def test_unpinned_file_without_a_validator_starts_over(
    server: FakeServer,
    tmp_path: Path,
) -> None:
    server.etags = False
    dest = _cut_then_changed(server, tmp_path)
    download(server.url("/unpinned.bin"), dest)
    assert dest.read_bytes() == NEW
    assert [r.range for r in server.requests] == [None, None]


def test_pinned_file_still_resumes(server: FakeServer, tmp_path: Path) -> None:
    import hashlib

    url = server.serve("/pinned.bin", OLD)
    server.cut_after = CUT
    with pytest.raises(NetworkError):
        download(url, tmp_path / "pinned.bin", sha256=hashlib.sha256(OLD).hexdigest())
    server.etags = False
    download(url, tmp_path / "pinned.bin", sha256=hashlib.sha256(OLD).hexdigest())
    assert [r.range for r in server.requests] == [None, f"bytes={CUT}-"]


def test_installs_of_one_model_side_by_side_all_succeed(
    setup: Setup,
    tmp_path: Path,
) -> None:
    setup.server.throttle_s = 0.02  # slow enough that the installs overlap
    errors: list[VoxtrayError] = []

    def install() -> None:
        store = ModelStore(tmp_path / "models", setup.catalog())
        try:
            store.install("demo-url")
        except VoxtrayError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=install) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    store = ModelStore(tmp_path / "models", setup.catalog())
    assert store.verify("demo-url").ok
    archives = [r for r in setup.server.requests if r.path.endswith(".tar.gz")]
    assert len(archives) == 1  # the others waited and found it installed


def test_killed_installs_leave_nothing_behind_after_the_next(
    setup: Setup,
    tmp_path: Path,
) -> None:
    root = tmp_path / "models"
    for kind in (".staging", ".trash"):
        left = root / kind / "demo-url-0badc0de"
        left.mkdir(parents=True)
        (left / "model.onnx").write_bytes(b"\0" * 1000)
    other = root / ".staging" / "demo-vad-0badc0de"  # another model's: not this install's
    other.mkdir()
    ModelStore(root, setup.catalog()).install("demo-url")
    assert not (root / ".staging" / "demo-url-0badc0de").exists()
    assert not (root / ".trash" / "demo-url-0badc0de").exists()
    assert other.exists()


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", ".hidden", "a/b", "", "x\\..\\y"])
def test_catalog_name_that_is_not_a_folder_name_is_refused(
    setup: Setup,
    name: str,
) -> None:
    raw = json.loads(setup.catalog_path.read_text())
    raw["models"][2]["name"] = name
    setup.catalog_path.write_text(json.dumps(raw))
    with pytest.raises(CorruptError, match="model name"):
        load_catalog(setup.catalog_path)
