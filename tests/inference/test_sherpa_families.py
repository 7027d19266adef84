"""SherpaRecognizer runs NeMo CTC, NeMo transducer and Moonshine models end to end, on tiny
generated models (tests/support/sherpa_models.py) that decode to known text, and turns broken
models into CorruptError.

sherpa-onnx ends the whole process (_Exit) on some broken models instead of throwing, so
those cases load in a child process, which must see a CorruptError: SherpaRecognizer checks
the files before handing them to sherpa-onnx.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.audio import REPO, Clip, read_wav
from tests.support.sherpa_models import (
    HIGH_TONE_HZ,
    LOW_TONE_HZ,
    make_moonshine,
    make_nemo_ctc,
    make_nemo_transducer,
)
from voxtray.audio import SAMPLE_RATE
from voxtray.errors import CorruptError
from voxtray.inference.recognizers.sherpa import SherpaRecognizer

pytest.importorskip("sherpa_onnx")

Files = dict[str, Path]
Audio = NDArray[np.float32]

BUILDERS: dict[str, Callable[[Path], Files]] = {
    "nemo-ctc": make_nemo_ctc,
    "nemo-transducer": make_nemo_transducer,
    "moonshine": make_moonshine,
}
FAMILIES = list(BUILDERS)


@pytest.fixture(scope="session")
def fake_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Files]:
    root = tmp_path_factory.mktemp("fake-sherpa-models")
    return {family: build(root / family) for family, build in BUILDERS.items()}


@pytest.fixture(scope="session")
def recognizers(fake_models: dict[str, Files]) -> dict[str, SherpaRecognizer]:
    return {
        family: SherpaRecognizer(family, files, model=f"fake-{family}")
        for family, files in fake_models.items()
    }


# --- audio ---------------------------------------------------------------------------


def _tone(hz: float, seconds: float = 0.5, amplitude: float = 0.5) -> Audio:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    # 20 ms fades: a hard onset clicks across the whole spectrum and would light up the
    # other band too.
    fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.02)
    return (amplitude * np.sin(2 * np.pi * hz * t) * fade).astype(np.float32)


def _gap(seconds: float = 0.5) -> Audio:
    return np.zeros(int(seconds * SAMPLE_RATE), dtype=np.float32)


def _room_noise(seconds: float = 2.0) -> Audio:
    # -54 dBFS: above SherpaRecognizer's -60 dBFS silence gate, so the model itself has to
    # decide that it is not speech.
    noise = np.random.default_rng(7).standard_normal(int(seconds * SAMPLE_RATE))
    return (0.002 * noise).astype(np.float32)


def _low_then_high() -> Audio:
    return np.concatenate([_gap(), _tone(LOW_TONE_HZ), _gap(), _tone(HIGH_TONE_HZ), _gap()])


def _high_then_low() -> Audio:
    return np.concatenate([_gap(), _tone(HIGH_TONE_HZ), _gap(), _tone(LOW_TONE_HZ), _gap()])


def _low_in_noise() -> Audio:
    audio = np.concatenate([_gap(), _tone(LOW_TONE_HZ), _gap()])
    return audio + _room_noise(len(audio) / SAMPLE_RATE)


AUDIO: dict[str, Callable[[], Audio]] = {
    "low-then-high": _low_then_high,
    "high-then-low": _high_then_low,
    "low-in-noise": _low_in_noise,
    "room-noise": _room_noise,
}
# The NeMo fakes read the mel bands (low tone: "hello", high tone: "world"); the Moonshine
# fake hears only loudness, so any tone is "hello world".
EXPECTED: dict[str, dict[str, str]] = {
    "nemo-ctc": {
        "low-then-high": "hello world",
        "high-then-low": "world hello",
        "low-in-noise": "hello",
        "room-noise": "",
    },
    "nemo-transducer": {
        "low-then-high": "hello world",
        "high-then-low": "world hello",
        "low-in-noise": "hello",
        "room-noise": "",
    },
    "moonshine": {
        "low-then-high": "hello world",
        "high-then-low": "hello world",
        "low-in-noise": "hello world",
        "room-noise": "",
    },
}


# --- loading and decoding --------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_fake_models_are_tiny(fake_models: dict[str, Files], family: str) -> None:
    assert all(path.stat().st_size < 4096 for path in fake_models[family].values())


@pytest.mark.parametrize("family", FAMILIES)
def test_loads_and_warms_up_on_cpu(recognizers: dict[str, SherpaRecognizer], family: str) -> None:
    recognizer = recognizers[family]
    recognizer.warmup()
    assert recognizer.provider == "cpu"
    assert (recognizer.engine, recognizer.family, recognizer.model) == (
        "sherpa",
        family,
        f"fake-{family}",
    )


@pytest.mark.parametrize("audio_name", list(AUDIO))
@pytest.mark.parametrize("family", FAMILIES)
def test_transcribes_known_text(
    recognizers: dict[str, SherpaRecognizer], family: str, audio_name: str
) -> None:
    transcript = recognizers[family].transcribe(AUDIO[audio_name]())
    assert transcript.text == EXPECTED[family][audio_name]
    assert transcript.provider == "cpu"
    # Above zero: the model really ran (the silence gate returns 0.0 without running it).
    assert transcript.timings_ms["recognize"] > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_digital_silence_is_empty(recognizers: dict[str, SherpaRecognizer], family: str) -> None:
    assert recognizers[family].transcribe(_gap(2.0)).text == ""


@pytest.mark.parametrize("family", FAMILIES)
def test_real_speech_clip(
    recognizers: dict[str, SherpaRecognizer], eval_clips: list[Clip], family: str
) -> None:
    audio = read_wav(eval_clips[0].path)[: 8 * SAMPLE_RATE]
    words = recognizers[family].transcribe(audio).text.split()
    if family == "moonshine":
        assert words == ["hello", "world"]
    else:
        # Speech fills both bands in turn; which word comes when depends on the clip.
        assert words
        assert set(words) <= {"hello", "world"}


# --- broken models that raise in process -----------------------------------------------


# The file roles each family's loader reads.
ROLES: dict[str, list[str]] = {
    "whisper": ["encoder", "decoder", "tokens"],
    "nemo-ctc": ["model", "tokens"],
    "nemo-transducer": ["encoder", "decoder", "joiner", "tokens"],
    "moonshine": ["preprocessor", "encoder", "uncached_decoder", "cached_decoder", "tokens"],
}
ALL_ROLES = [(family, role) for family in FAMILIES for role in ROLES[family]]
# Loading one family's files as another family whose roles they lack. (Transducer files
# have everything whisper reads; that case ends the process and is checked below.)
ROLE_MISMATCHES = [
    (family, files_of)
    for family in ROLES
    for files_of in FAMILIES
    if not set(ROLES[family]) <= set(ROLES[files_of])
]


def _assert_one_line(error: pytest.ExceptionInfo[CorruptError]) -> str:
    message = str(error.value)
    assert message
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("family", "role"), ALL_ROLES)
def test_missing_file(
    fake_models: dict[str, Files], tmp_path: Path, family: str, role: str
) -> None:
    files = {**fake_models[family], role: tmp_path / "absent"}
    with pytest.raises(CorruptError) as error:
        SherpaRecognizer(family, files)
    message = _assert_one_line(error)
    assert "missing" in message
    assert role in message


@pytest.mark.parametrize(
    ("family", "role"), [(family, role) for family, role in ALL_ROLES if role != "tokens"]
)
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_onnx(
    fake_models: dict[str, Files], tmp_path: Path, family: str, role: str, damage: str
) -> None:
    original = fake_models[family][role].read_bytes()
    broken = tmp_path / f"{role}.onnx"
    broken.write_bytes(b"\x00not a protobuf\xff" * 8 if damage == "garbage" else original[:-40])
    with pytest.raises(CorruptError) as error:
        SherpaRecognizer(family, {**fake_models[family], role: broken})
    message = _assert_one_line(error)
    assert family in message
    # Checked by Voxtray for the files whose metadata it reads, by sherpa-onnx for the rest.
    assert "not a readable ONNX model" in message or "Protobuf parsing failed" in message


@pytest.mark.parametrize(("family", "files_of"), ROLE_MISMATCHES)
def test_files_of_another_family(fake_models: dict[str, Files], family: str, files_of: str) -> None:
    with pytest.raises(CorruptError) as error:
        SherpaRecognizer(family, fake_models[files_of])
    assert family in _assert_one_line(error)


@pytest.mark.parametrize("family", FAMILIES)
def test_tokens_role_absent(fake_models: dict[str, Files], family: str) -> None:
    files = {role: path for role, path in fake_models[family].items() if role != "tokens"}
    with pytest.raises(CorruptError):
        SherpaRecognizer(family, files)


# --- broken models that end the process: checked in a child --------------------------

_CHILD = """
import json, sys
from pathlib import Path
import numpy as np
from voxtray.errors import CorruptError
from voxtray.inference.recognizers.sherpa import SherpaRecognizer

family, files = json.loads(sys.argv[1])
try:
    recognizer = SherpaRecognizer(family, {role: Path(p) for role, p in files.items()})
    t = np.arange(16000) / 16000
    text = recognizer.transcribe((0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)).text
    print(json.dumps({"outcome": "transcribed", "text": text}))
except CorruptError as exc:
    print(json.dumps({"outcome": "CorruptError", "message": str(exc)}))
except Exception as exc:
    print(json.dumps({"outcome": type(exc).__name__, "message": str(exc)}))
"""


def _load_in_child(family: str, files: Files) -> dict[str, str]:
    """What loading `files` as `family` and transcribing a tone does, in a child process
    that sherpa-onnx may end without harming the test run."""
    argument = json.dumps([family, {role: str(path) for role, path in files.items()}])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, argument],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"outcome": f"exit {done.returncode}", "message": last}
    result: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


Models = dict[str, Files]


def _tokens(tmp: Path, text: str) -> Path:
    path = tmp / "tokens.txt"
    path.write_text(text, encoding="utf-8")
    return path


def _ctc_without_blank(tmp: Path, models: Models) -> Files:
    return {**models["nemo-ctc"], "tokens": _tokens(tmp, "▁hello 0\n▁world 1\n")}


def _transducer_without_blank(tmp: Path, models: Models) -> Files:
    return {**models["nemo-transducer"], "tokens": _tokens(tmp, "▁hello 0\n▁world 1\n")}


def _moonshine_empty_tokens(tmp: Path, models: Models) -> Files:
    return {**models["moonshine"], "tokens": _tokens(tmp, "")}


def _transducer_with_ctc_encoder(tmp: Path, models: Models) -> Files:
    return {**models["nemo-transducer"], "encoder": models["nemo-ctc"]["model"]}


def _transducer_swapped(tmp: Path, models: Models) -> Files:
    files = models["nemo-transducer"]
    return {**files, "encoder": files["decoder"], "decoder": files["encoder"]}


def _ctc_from_moonshine_encoder(tmp: Path, models: Models) -> Files:
    return {**models["nemo-ctc"], "model": models["moonshine"]["encoder"]}


def _ctc_from_transducer_encoder(tmp: Path, models: Models) -> Files:
    return {**models["nemo-ctc"], "model": models["nemo-transducer"]["encoder"]}


def _whisper_from_transducer(tmp: Path, models: Models) -> Files:
    return models["nemo-transducer"]


def _moonshine_swapped(tmp: Path, models: Models) -> Files:
    files = models["moonshine"]
    return {
        **files,
        "uncached_decoder": files["cached_decoder"],
        "cached_decoder": files["uncached_decoder"],
    }


def _moonshine_truncated(tmp: Path, models: Models) -> Files:
    broken = tmp / "cached_decode.onnx"
    broken.write_bytes(models["moonshine"]["cached_decoder"].read_bytes()[:100])
    return {**models["moonshine"], "cached_decoder": broken}


# (family to load as, how to build its broken files): without Voxtray's checks, sherpa-onnx
# ends the process on most of these, or silently returns empty text.
CHILD_CASES: list[tuple[str, Callable[[Path, Models], Files]]] = [
    ("nemo-ctc", _ctc_without_blank),
    ("nemo-transducer", _transducer_without_blank),
    ("moonshine", _moonshine_empty_tokens),
    ("nemo-transducer", _transducer_with_ctc_encoder),
    ("nemo-transducer", _transducer_swapped),
    ("nemo-ctc", _ctc_from_moonshine_encoder),
    ("nemo-ctc", _ctc_from_transducer_encoder),
    ("whisper", _whisper_from_transducer),
    ("moonshine", _moonshine_swapped),
    ("moonshine", _moonshine_truncated),
]


def _child_params() -> list[object]:
    return [
        pytest.param(family, broken, id=broken.__name__.lstrip("_"))
        for family, broken in CHILD_CASES
    ]


@pytest.mark.parametrize(("family", "broken"), _child_params())
def test_broken_model_in_child_process(
    fake_models: Models,
    tmp_path: Path,
    family: str,
    broken: Callable[[Path, Models], Files],
) -> None:
    result = _load_in_child(family, broken(tmp_path, fake_models))
    assert result["outcome"] == "CorruptError", result
    assert "\n" not in result["message"]
