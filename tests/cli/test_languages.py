"""Languages: the setting (auto or a code), detection on multilingual Whisper, the language
reported on every result. Real German and French speech comes from espeak-ng."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from voxtray.audio.decode import load_audio
from voxtray.config import Settings, SettingsError
from voxtray.errors import ExitCode, VoxtrayError
from voxtray.inference.engines import EngineChoice, create_recognizer
from voxtray.inference.pipeline import SegmentRecord, _utterance_language
from voxtray.inference.recognizers.ort_whisper import OrtWhisperRecognizer
from voxtray.models.store import InstalledModel, ModelStore
from voxtray.text.languages import main_language

SPEECH = {
    "de": "Guten Morgen. Heute ist das Wetter schön, und wir gehen am Nachmittag in den Park.",
    "fr": "Bonjour à tous. Aujourd'hui il fait beau, et nous allons nous promener dans le parc.",
}


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (packaging/dev.sh installs it)")
    folder = tmp_path_factory.mktemp("speech")
    paths = {}
    for code, text in SPEECH.items():
        paths[code] = folder / f"{code}.wav"
        subprocess.run(["espeak-ng", "-v", code, "-w", str(paths[code]), text], check=True)
    return paths


def _ort(model: InstalledModel, language: str) -> OrtWhisperRecognizer:
    recognizer = create_recognizer(model, EngineChoice(engine="ort", language=language))
    assert isinstance(recognizer, OrtWhisperRecognizer)
    return recognizer


def _audio(path: Path) -> NDArray[np.float32]:
    return load_audio(path)


def test_setting_accepts_auto_and_codes_and_names_what_it_allows() -> None:
    assert Settings(language="auto").language == "auto"
    assert Settings(language="de").language == "de"
    with pytest.raises(SettingsError, match="setting language must be auto or a language code"):
        Settings(language="german")


def test_main_language_is_the_one_spoken_longest() -> None:
    assert main_language([("de", 1.0), ("en", 0.5), ("en", 0.6), (None, 9.0)]) == "en"
    assert main_language([(None, 2.0)]) is None
    segments = [
        SegmentRecord(0.0, 4.0, "", 1.0, {}, False, ["no-speech"], "fr"),
        SegmentRecord(4.0, 6.0, "Hallo", 1.0, {}, False, [], "de"),
    ]
    # Segments that produced no text do not decide the language.
    assert _utterance_language(segments) == "de"


def test_unknown_language_is_a_usage_error_before_loading(tmp_path: Path) -> None:
    env = {**os.environ, "VOXTRAY_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-m", "voxtray", "transcribe", "x.wav", "--language", "xx"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == ExitCode.USAGE
    assert "unknown language 'xx'" in result.stderr
    assert "auto or one of en, zh, de" in result.stderr
    assert not (tmp_path / "home").exists()


def test_base_detects_german_and_french(
    whisper_base: InstalledModel, speech: dict[str, Path]
) -> None:
    recognizer = _ort(whisper_base, "auto")
    for code, path in speech.items():
        transcript = recognizer.transcribe(_audio(path))
        assert transcript.language == code, transcript
        assert transcript.text


def test_fixed_language_is_used_and_reported(
    whisper_base: InstalledModel, speech: dict[str, Path]
) -> None:
    transcript = _ort(whisper_base, "en").transcribe(_audio(speech["de"]))
    assert transcript.language == "en"
    # Forced to English, Whisper translates or transliterates: the German words are gone.
    assert "Morgen" not in transcript.text


def test_language_the_model_lacks_is_refused(whisper_base: InstalledModel) -> None:
    # Cantonese came with large-v3; base has 99 languages.
    with pytest.raises(VoxtrayError, match="cannot transcribe language 'yue'") as caught:
        _ort(whisper_base, "yue")
    assert caught.value.exit_code == ExitCode.USAGE


def test_english_only_model_reports_english(
    tiny_en: InstalledModel, speech: dict[str, Path]
) -> None:
    recognizer = _ort(tiny_en, "auto")
    assert recognizer.transcribe(_audio(speech["de"])).language == "en"
    assert _ort(tiny_en, "de").transcribe(_audio(speech["fr"])).language == "en"


def test_sherpa_whisper_detects(whisper_base: InstalledModel, speech: dict[str, Path]) -> None:
    recognizer = create_recognizer(whisper_base, EngineChoice(engine="sherpa", language="auto"))
    assert recognizer.transcribe(_audio(speech["fr"])).language == "fr"


def test_transcribe_json_reports_detected_language(
    model_store: ModelStore, whisper_base: InstalledModel, speech: dict[str, Path]
) -> None:
    env = {**os.environ, "VOXTRAY_HOME": str(model_store.root.parent)}
    env.pop("VOXTRAY_CATALOG", None)
    flags = ["--model", "whisper-base", "--language", "auto", "--json"]
    result = subprocess.run(
        [sys.executable, "-m", "voxtray", "transcribe", str(speech["de"]), *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["language"] == "de"
    assert {segment["language"] for segment in row["segments"]} == {"de"}
