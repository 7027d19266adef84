"""Unpinned downloads on a local HTTP server serving a generated sherpa-onnx-style archive
(a tiny real NeMo CTC model): consent, trust on first use, a changed archive refused,
cancel then resume, the free-space refusal, and removal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.support.sherpa_models import HIGH_TONE_HZ, LOW_TONE_HZ
from tests.support.store import ARCHIVE, NAME, PADDING, Fake, make_archive, sha
from voxtray.cli.main import main
from voxtray.errors import CancelledError, CorruptError, DiskError, ExitCode
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.models import limits
from voxtray.models.catalog import load_catalog
from voxtray.models.download import CHUNK_SIZE
from voxtray.models.limits import CancelToken
from voxtray.models.progress import InstallProgress, InstallStep
from voxtray.models.store import ModelStore, UnpinnedError


def leftovers(root: Path) -> list[Path]:
    """Files a failed install might leave where they do not belong."""
    return [p for p in (root / ".staging").rglob("*") if p.is_file()] if root.exists() else []


def hello_world() -> np.ndarray:
    def tone(hz: float) -> np.ndarray:
        t = np.arange(8000, dtype=np.float32) / 16000
        return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)

    gap = np.zeros(8000, dtype=np.float32)
    return np.concatenate([gap, tone(LOW_TONE_HZ), gap, tone(HIGH_TONE_HZ), gap])


def test_unpinned_needs_consent_and_nothing_is_fetched_without_it(fake: Fake) -> None:
    store = fake.store()
    assert store.needs_consent(NAME)
    with pytest.raises(UnpinnedError) as refused:
        store.install(NAME)
    assert refused.value.model == NAME
    assert refused.value.url.endswith(ARCHIVE)
    assert refused.value.exit_code == ExitCode.USAGE
    assert fake.archive_requests() == []
    assert not (fake.root / "trusted.json").exists()
    assert store.get(NAME) is None


def test_consent_installs_records_trust_and_the_model_runs(fake: Fake) -> None:
    store = fake.store()
    model = store.install(NAME, allow_unpinned=True)

    trusted = json.loads((fake.root / "trusted.json").read_text())
    [(url, record)] = trusted["archives"].items()
    assert url.endswith(ARCHIVE)
    assert record["model"] == NAME
    assert record["sha256"] == sha(fake.archive)
    assert record["size"] == len(fake.archive)
    onnx = (fake.model_dir / "model.onnx").read_bytes()
    assert record["files"]["model.int8.onnx"] == sha(onnx)
    assert model.manifest["source"] == {
        "url": url,
        "size": len(fake.archive),
        "sha256": sha(fake.archive),
        "trust": "first use",
    }
    assert not store.needs_consent(NAME)
    assert store.verify(NAME).ok

    recognizer = create_recognizer(model, EngineChoice(provider="cpu"))
    assert recognizer.transcribe(hello_world()).text.strip().lower() == "hello world"


def test_changed_archive_is_refused_on_redownload(fake: Fake, model_dir: Path) -> None:
    store = fake.store()
    first = store.install(NAME, allow_unpinned=True)
    before = (fake.root / "trusted.json").read_bytes()

    changed = make_archive(model_dir, padding=os.urandom(len(PADDING)))
    fake.server.serve(f"/asr-models/{ARCHIVE}", changed)
    with pytest.raises(CorruptError, match="not what you trusted") as refused:
        store.install(NAME, force=True)
    assert "trusted.json" in str(refused.value)
    assert refused.value.exit_code == ExitCode.CORRUPT
    # Nothing half-written: the installed model, its trust record and the store are as before.
    assert store.verify(NAME).ok
    assert (fake.root / "trusted.json").read_bytes() == before
    assert leftovers(fake.root) == []
    assert [p.name for p in (fake.root / ".downloads").iterdir()] == []
    assert first.manifest == store.require(NAME).manifest

    # The bytes first trusted install again without asking.
    fake.server.serve(f"/asr-models/{ARCHIVE}", fake.archive)
    again = store.install(NAME, force=True)
    assert again.manifest["source"]["trust"] == "recorded"


def test_verify_compares_with_the_trusted_files(fake: Fake) -> None:
    """A model file and its manifest replaced together still fail verify: the trust record
    lives outside the model folder."""
    store = fake.store()
    model = store.install(NAME, allow_unpinned=True)
    tokens = model.path / "tokens.txt"
    tokens.write_text("▁goodbye 0\n▁world 1\n<blk> 2\n", encoding="utf-8")
    manifest = json.loads((model.path / "manifest.json").read_text())
    manifest["files"]["tokens.txt"] = {
        "size": tokens.stat().st_size,
        "sha256": sha(tokens.read_bytes()),
    }
    (model.path / "manifest.json").write_text(json.dumps(manifest))
    report = store.verify(NAME)
    assert not report.ok
    assert [(p.path, p.problem) for p in report.problems] == [("tokens.txt", "trust")]
    assert "trusted" in report.problems[0].detail


def test_cancel_keeps_the_part_and_the_next_install_resumes(fake: Fake) -> None:
    store = fake.store()
    token = CancelToken()
    seen: list[int] = []

    def progress(report: InstallProgress) -> None:
        if report.step is InstallStep.DOWNLOADING:
            seen.append(report.done)
            if report.done >= CHUNK_SIZE:
                token.cancel()

    with pytest.raises(CancelledError, match="cancelled") as stopped:
        store.install(NAME, allow_unpinned=True, progress=progress, cancel=token)
    assert stopped.value.exit_code == ExitCode.INTERRUPTED
    part = fake.root / ".downloads" / f"{ARCHIVE}.part"
    kept = part.stat().st_size
    assert CHUNK_SIZE <= kept < len(fake.archive)
    assert part.read_bytes() == fake.archive[:kept]
    assert store.get(NAME) is None
    assert leftovers(fake.root) == []
    assert not (fake.root / "trusted.json").exists()

    model = store.install(NAME, allow_unpinned=True)
    assert fake.archive_requests() == [None, f"bytes={kept}-"]
    assert model.manifest["source"]["sha256"] == sha(fake.archive)
    assert not part.exists()


def test_not_enough_free_space_is_refused_before_anything_is_written(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Path] = []

    def tiny_disk(path: Path) -> int:
        asked.append(path)
        return 10_000_000

    monkeypatch.setattr(limits, "free_bytes", tiny_disk)
    store = fake.store()
    with pytest.raises(DiskError, match="not enough free space") as refused:
        store.install(NAME, allow_unpinned=True)
    assert refused.value.exit_code == ExitCode.DISK
    assert asked == [fake.root]
    assert fake.archive_requests() == []
    assert not fake.root.exists() or not [p for p in fake.root.rglob("*") if p.is_file()]


def test_free_space_refusal_on_the_command_line(
    fake: Fake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VOXTRAY_HOME", str(fake.root.parent / "home"))
    monkeypatch.setenv("VOXTRAY_CATALOG", str(fake.catalog_path))
    monkeypatch.setattr(limits, "free_bytes", lambda path: 1_000_000)
    code = main(["models", "install", NAME, "--allow-unpinned"])
    assert code == ExitCode.DISK
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("voxtray: error: not enough free space for fake-parakeet-ctc")
    assert "MB are free" in err[-1]


def test_remove_keeps_the_trust_record(fake: Fake) -> None:
    store = fake.store()
    store.install(NAME, allow_unpinned=True)
    assert store.remove(NAME)
    assert store.get(NAME) is None
    assert not store.needs_consent(NAME)
    assert store.install(NAME).manifest["source"]["trust"] == "recorded"


def test_real_catalog_needs_consent_only_where_nothing_is_pinned(tmp_path: Path) -> None:
    store = ModelStore(tmp_path, load_catalog())
    needs = {name for name in store.catalog.models if store.needs_consent(name)}
    assert "parakeet-tdt-0.6b-v2" not in needs
    assert "moonshine-tiny" not in needs
    assert "sherpa-whisper-turbo" in needs
    assert all(not store.catalog.get(name).pinned for name in needs)


def test_command_line_consent_then_a_changed_archive_is_exit_4(
    fake: Fake,
    model_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = fake.root.parent / "home"
    monkeypatch.setenv("VOXTRAY_HOME", str(home))
    monkeypatch.setenv("VOXTRAY_CATALOG", str(fake.catalog_path))
    assert main(["models", "install", NAME]) == ExitCode.USAGE
    assert "--allow-unpinned" in capsys.readouterr().err
    assert main(["models", "install", NAME, "--allow-unpinned"]) == ExitCode.OK
    listed = capsys.readouterr()
    assert main(["models", "list", "--json"]) == ExitCode.OK
    [row] = json.loads(capsys.readouterr().out)["models"]
    assert row["installed"]
    assert not row["pinned"]
    assert not row["needs_consent"]
    assert "installed" in listed.err

    fake.server.serve(f"/asr-models/{ARCHIVE}", make_archive(model_dir, os.urandom(1000)))
    assert main(["models", "install", NAME, "--force", "--allow-unpinned"]) == ExitCode.CORRUPT
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"voxtray: error: {ARCHIVE} is not what you trusted on ")
    assert main(["models", "verify", NAME]) == ExitCode.OK
