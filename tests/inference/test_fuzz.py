"""Property-based fuzzing of the code that reads bytes it did not write.

* `load_audio` on arbitrary bytes and on real WAV/FLAC/OGG/MP3 files with flipped,
  overwritten or truncated bytes: only NotFoundError/BadInputError may escape, and a
  success is 1-D float32 in [-1, 1].
* `resample` on random lengths and rate pairs: the documented output length, finite output.
* The control socket server on random request bytes: it answers or hangs up, and still
  answers a valid `status` afterwards.

The settings parser is not fuzzed here: tests/test_config.py already runs hypothesis over
`Settings.from_json` (any JSON value, any object) and `SettingsStore.load` (any bytes).

Three bugs this fuzzing found have their own tests at the end:
test_absurd_sampling_rate_is_bad_input,
test_mp3_claiming_billions_of_frames_is_decoded_or_refused and
test_deeply_nested_request_does_not_kill_the_server.
"""

from __future__ import annotations

import io
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile  # type: ignore[import-untyped, unused-ignore]
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from tests.support.audio import SPEECH_DIR, read_wav
from voxtray.audio import SAMPLE_RATE
from voxtray.audio.decode import load_audio, resample
from voxtray.control.server import COMMANDS, ControlServer, send
from voxtray.errors import BadInputError, NotFoundError

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# --- load_audio ---------------------------------------------------------------------------

FORMATS = {
    "wav": ("WAV", "PCM_16"),
    "flac": ("FLAC", "PCM_16"),
    "ogg": ("OGG", "VORBIS"),
    "opus": ("OGG", "OPUS"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
}


def _encode(audio: np.ndarray, container: str, subtype: str) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, audio, SAMPLE_RATE, format=container, subtype=subtype)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def seeds() -> dict[str, bytes]:
    """0.2 s of real speech in each format libsndfile decodes here (a few KB each)."""
    speech = read_wav(CLIP)[4000:7200]
    found = {}
    for name, (container, subtype) in FORMATS.items():
        try:
            found[name] = _encode(speech, container, subtype)
        except (soundfile.LibsndfileError, ValueError, TypeError):
            continue  # an older libsndfile without this encoder
    return found


def _decode_contract(path: Path) -> None:
    """The whole promise of load_audio on untrusted bytes."""
    refused: str | None = None
    try:
        audio = load_audio(path)
    except (NotFoundError, BadInputError) as exc:
        refused = str(exc)
    if refused is not None:
        assert "\n" not in refused
        assert refused.startswith(f"{path}: ")
        return
    assert audio.dtype == np.float32
    assert audio.ndim == 1
    assert audio.size > 0
    assert np.isfinite(audio).all()
    assert float(np.abs(audio).max()) <= 1.0


@FUZZ
@given(data=st.binary(max_size=4096))
@example(data=b"")
@example(data=b"RIFF\x24\x00\x00\x00WAVEfmt ")
@example(data=b"fLaC" + bytes(60))
@example(data=b"OggS" + bytes(60))
@example(data=b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(100))
def test_load_audio_on_arbitrary_bytes(tmp_path: Path, data: bytes) -> None:
    """Random bytes are refused with a one-line BadInputError, never a crash."""
    path = tmp_path / "fuzz.wav"
    path.write_bytes(data)
    _decode_contract(path)


@FUZZ
@given(
    fmt=st.sampled_from(sorted(FORMATS)),
    edits=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(0, 255), st.booleans()), max_size=6
    ),
    cut=st.none() | st.floats(0.0, 1.0),
)
def test_load_audio_on_damaged_real_files(
    tmp_path: Path,
    seeds: dict[str, bytes],
    fmt: str,
    edits: list[tuple[int, int, bool]],
    cut: float | None,
) -> None:
    """Real files with bytes overwritten or bit-flipped (mostly in the header, where the
    parsers are) and optionally truncated: decoded or refused, never a crash."""
    assume(fmt in seeds)
    data = bytearray(seeds[fmt])
    for position, value, in_header in edits:
        index = position % (min(len(data), 128) if in_header else len(data))
        data[index] = value if in_header else data[index] ^ (1 << (value % 8))
    if cut is not None:
        data = data[: int(len(data) * cut)]
    path = tmp_path / f"damaged.{fmt}"
    path.write_bytes(bytes(data))
    _decode_contract(path)


# --- resample -----------------------------------------------------------------------------

# Common device and file rates, plus any multiple of 100 Hz up to 192 kHz: their ratios
# reduce to small integers, as every real rate pair does (odd pairs are the bug below).
COMMON_RATES = [8000, 11025, 16000, 22050, 24000, 44100, 48000, 96000]
RATES = st.sampled_from(COMMON_RATES) | st.integers(10, 1920).map(lambda hundreds: 100 * hundreds)


@settings(max_examples=120, deadline=None)
@given(
    length=st.integers(0, 20_000),
    source=RATES,
    target=RATES,
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.0, 1e-6, 0.5, 1.0, 1e3]),
)
def test_resample_length_and_finiteness(
    length: int, source: int, target: int, seed: int, scale: float
) -> None:
    """The output has round(n * target / source) samples, float32, all finite."""
    audio = (np.random.default_rng(seed).standard_normal(length) * scale).astype(np.float32)
    out = resample(audio, source, target)
    assert out.dtype == np.float32
    assert out.shape == (round(length * target / source),)
    assert np.isfinite(out).all()
    if scale == 0.0:
        assert not out.any()


# --- the control socket -------------------------------------------------------------------


@pytest.fixture
def control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ControlServer]:
    monkeypatch.setenv("VOXTRAY_HOME", str(tmp_path))
    server = ControlServer(lambda request: {"ok": True, "state": "ready", "cmd": request["cmd"]})
    assert server.start()
    yield server
    server.stop()


def _exchange(path: Path, payload: bytes) -> bytes:
    """Send `payload`, close our side, return whatever comes back before the hang-up."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(5)
        client.connect(str(path))
        answer = b""
        try:
            client.sendall(payload)
            client.shutdown(socket.SHUT_WR)
            while chunk := client.recv(4096):
                answer += chunk
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server hung up first: an answer, too
    return answer


JSON_REQUESTS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
).map(lambda value: json.dumps(value).encode())
CMD_REQUESTS = st.fixed_dictionaries(
    {"cmd": st.sampled_from(COMMANDS) | st.text(max_size=10) | st.integers()}
).map(lambda value: json.dumps(value).encode())


@FUZZ
@given(
    body=st.binary(max_size=2048) | JSON_REQUESTS | CMD_REQUESTS,
    newline=st.booleans(),
)
@example(body=b"\xff\xfe", newline=True)
@example(body=b"9" * 5000, newline=True)
@example(body=b'{"cmd": "status"}{"cmd": "quit"}', newline=True)
@example(body=b"\n\n\n", newline=False)
def test_control_server_survives_random_requests(
    control: ControlServer, body: bytes, newline: bool
) -> None:
    """Every request gets one JSON object line or a hang-up; the server thread lives on."""
    answer = _exchange(control.path, body + (b"\n" if newline else b""))
    if answer:
        assert answer.endswith(b"\n")
        reply: Any = json.loads(answer)
        assert isinstance(reply, dict)
        assert "ok" in reply
    assert send("status", path=control.path)["state"] == "ready"


def test_control_server_survives_a_burst_of_garbage(control: ControlServer) -> None:
    """Oversized, binary and half-sent requests in a row leave a working server."""
    rng = np.random.default_rng(7)
    for payload in (os.urandom(70_000), b"{" * 100, rng.bytes(65_000) + b"\n", b""):
        _exchange(control.path, payload)
    assert send("status", path=control.path) == {"ok": True, "state": "ready", "cmd": "status"}


# --- bugs found by the fuzzing above --------------------------------------------------------


def _wav_header(rate: int, frames: int) -> bytes:
    """A 16-bit mono PCM WAV of silence whose header claims `rate` Hz."""
    data = bytes(2 * frames)
    fmt = (
        (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little")  # PCM
        + (1).to_bytes(2, "little")  # mono
        + rate.to_bytes(4, "little")
        + ((2 * rate) % 2**32).to_bytes(4, "little")
        + (2).to_bytes(2, "little")
        + (16).to_bytes(2, "little")
    )
    body = b"WAVE" + b"fmt " + fmt + b"data" + len(data).to_bytes(4, "little") + data
    return b"RIFF" + len(body).to_bytes(4, "little") + body


@pytest.mark.parametrize(("rate", "frames"), [(1, 200), (2**31 - 1, 1000)])
def test_absurd_sampling_rate_is_bad_input(tmp_path: Path, rate: int, frames: int) -> None:
    """A corrupt header's sampling rate must not decide how much memory and time a
    400-byte file costs: refuse rates no audio format uses, with a one-line error."""
    path = tmp_path / "odd-rate.wav"
    path.write_bytes(_wav_header(rate, frames))
    assert soundfile.info(str(path)).samplerate == rate
    with pytest.raises(BadInputError, match="sampling rate"):
        load_audio(path)


def test_mp3_claiming_billions_of_frames_is_decoded_or_refused(
    tmp_path: Path, seeds: dict[str, bytes]
) -> None:
    """A 2 KB MP3 whose Xing header claims 2**31-1 frames: decode what is there or refuse
    it as BadInputError; never MemoryError (exit 1, "internal error")."""
    if "mp3" not in seeds:
        pytest.skip("this libsndfile cannot write MP3")
    data = bytearray(seeds["mp3"])
    xing = data.find(b"Xing")
    assert xing >= 0
    data[xing + 8 : xing + 12] = (2**31 - 1).to_bytes(4, "big")
    path = tmp_path / "huge.mp3"
    path.write_bytes(bytes(data))
    assert soundfile.info(str(path)).frames > 10**12
    _decode_contract(path)


def test_deeply_nested_request_does_not_kill_the_server(control: ControlServer) -> None:
    """60 000 '[' (under the 64 KiB request limit) must be refused like any bad JSON, not
    end the server thread, which would leave the instance deaf to `voxtray` commands."""
    assert _exchange(control.path, b"[" * 60_000 + b"\n") == b""
    assert send("status", path=control.path)["state"] == "ready"
