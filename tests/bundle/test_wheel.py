"""The wheel a user installs: the import package is `voxtray`, nothing named `app` lands in
site-packages, and the catalog and icons travel inside it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.audio import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(REPO),
            "-w",
            str(out),
        ],
        check=True,
        timeout=300,
    )
    [built] = out.glob("voxtray-*.whl")
    return built


def test_wheel_holds_only_the_voxtray_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    [info] = tops - {"voxtray"}
    assert info.endswith(".dist-info"), tops
    assert "voxtray/models/catalog.json" in names
    assert "voxtray/resources/icons/voxtray.svg" in names
    assert "voxtray/resources/selftest.wav" in names


def test_installed_wheel_imports_as_voxtray_and_finds_its_data(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    assert not (target / "app").exists()
    probe = (
        "import voxtray, voxtray.entry\n"
        "from voxtray.models.catalog import catalog_path\n"
        "from voxtray.resources import resource_path\n"
        "print(voxtray.__file__); print(catalog_path()); print(resource_path('selftest.wav'))"
    )
    # The checkout's app/ must not be what is imported: run from elsewhere, site first.
    done = subprocess.run(
        [sys.executable, "-S", "-c", f"import sys; sys.path.insert(0, {str(target)!r})\n{probe}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    module, catalog, clip = (Path(line) for line in done.stdout.splitlines())
    assert module.is_relative_to(target)
    assert catalog == target / "voxtray" / "models" / "catalog.json"
    assert clip == target / "voxtray" / "resources" / "selftest.wav"
