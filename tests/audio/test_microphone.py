"""Microphone capture: pre-roll, tail, ordering, device loss, errors, threads.

Most tests inject a fake ``sounddevice`` whose input stream replays a real clip from a
thread, block by block at (a multiple of) real time, and can be held at a known sample so
that begin() and end() fall on exact positions. The last tests record through a real
PulseAudio virtual microphone (tests/support/pulse.py).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.pulse import VirtualMicrophone
from tests.support.sounddevice import RATE, FakePortAudioError, FakeSoundDevice, FakeStream
from voxtray.audio.blocks import LEVEL_FLOOR_DB, StreamResampler, level_dbfs
from voxtray.audio.decode import resample
from voxtray.audio.inputs import InputDevice, MicrophoneError, list_input_devices
from voxtray.audio.microphone import Microphone

CLIP = SPEECH_DIR / "wav" / "harvard_sb_example1.wav"  # 3.26 s, speech from 36 ms on
BLOCK = 320  # 20 ms, Microphone's default block


@pytest.fixture(scope="module")
def clip() -> NDArray[np.float32]:
    return read_wav(CLIP)


# -- a fake sounddevice ----------------------------------------------------------------------


class Recorder:
    """A sink plus on_error/on_done handlers that remember what they got."""

    def __init__(self, delay: float = 0.0) -> None:
        self.blocks: list[NDArray[np.float32]] = []
        self.arrivals: list[float] = []
        self.errors: list[str] = []
        self.error = threading.Event()
        self.done = threading.Event()
        self.delay = delay

    def sink(self, block: NDArray[np.float32]) -> None:
        self.arrivals.append(time.perf_counter())
        self.blocks.append(block.copy())
        if self.delay:
            time.sleep(self.delay)

    def on_error(self, message: str) -> None:
        self.errors.append(message)
        self.error.set()

    def on_done(self) -> None:
        self.done.set()

    @property
    def audio(self) -> NDArray[np.float32]:
        if not self.blocks:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(self.blocks)


def ms(value: int) -> int:
    return value * RATE // 1000


def utterance(
    mic: Microphone, stream: FakeStream, recorder: Recorder, begin_at: int, end_at: int
) -> tuple[int, int]:
    """begin() with the stream held at ``begin_at`` and end() held at ``end_at``."""
    stream.wait_for(begin_at)
    began = stream.hold()
    mic.begin(recorder.sink, recorder.on_error)
    stream.resume()
    stream.wait_for(end_at)
    ended = stream.hold()
    mic.end(recorder.on_done)
    stream.resume()
    return began, ended


# -- pre-roll, tail, order --------------------------------------------------------------------


def test_preroll_and_tail_are_exact_slices_of_the_clip(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    recorder = Recorder()
    with Microphone(sd_module=fake, preroll_ms=400, tail_ms=300) as mic:
        began, ended = utterance(mic, fake.streams[0], recorder, ms(1000), ms(1800))
        assert recorder.done.wait(5)
    # The first block handed over is the pre-roll: the 400 ms before begin().
    assert np.array_equal(recorder.blocks[0], clip[began - ms(400) : began])
    # Everything, in order, no gap, no repeat, through 300 ms after end().
    assert np.array_equal(recorder.audio, clip[began - ms(400) : ended + ms(300)])
    assert recorder.audio.size == ms(400) + (ended - began) + ms(300)
    assert recorder.errors == []


def test_a_tail_given_to_end_replaces_the_default(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    recorder = Recorder()
    with Microphone(sd_module=fake, preroll_ms=400, tail_ms=300) as mic:
        stream = fake.streams[0]
        stream.wait_for(ms(1000))
        began = stream.hold()
        mic.begin(recorder.sink, recorder.on_error)
        stream.resume()
        stream.wait_for(ms(1800))
        ended = stream.hold()
        mic.end(recorder.on_done, tail_ms=0)
        stream.resume()
        assert recorder.done.wait(5)
    assert np.array_equal(recorder.audio, clip[began - ms(400) : ended])


def test_until_ends_the_tail_once_the_sink_heard_enough(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    recorder = Recorder()
    with Microphone(sd_module=fake, preroll_ms=400, tail_ms=2000) as mic:
        stream = fake.streams[0]
        stream.wait_for(ms(1000))
        began = stream.hold()
        mic.begin(recorder.sink, recorder.on_error)
        stream.resume()
        stream.wait_for(ms(1800))
        ended = stream.hold()
        delivered_at_end = ended - (began - ms(400))
        mic.end(recorder.on_done, until=lambda: recorder.audio.size >= delivered_at_end + ms(100))
        stream.resume()
        assert recorder.done.wait(5)
    # The tail stopped at the first block that reached 100 ms, far short of 2 s, and is
    # still an exact slice of the clip.
    tail = recorder.audio.size - delivered_at_end
    assert ms(100) <= tail < ms(300)
    assert np.array_equal(recorder.audio, clip[began - ms(400) : ended + tail])


def test_a_failing_until_ends_the_tail_instead_of_stalling_it(
    clip: NDArray[np.float32],
) -> None:
    def broken() -> bool:
        raise ValueError("bug")

    fake = FakeSoundDevice(clip)
    recorder = Recorder()
    with Microphone(sd_module=fake, preroll_ms=100, tail_ms=2000) as mic:
        stream = fake.streams[0]
        stream.wait_for(ms(500))
        mic.begin(recorder.sink, recorder.on_error)
        stream.wait_for(ms(900))
        mic.end(recorder.on_done, until=broken)
        assert recorder.done.wait(5)


def test_blocks_arrive_in_order_at_real_time(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip, speed=1.0)
    recorder = Recorder()
    with Microphone(sd_module=fake) as mic:
        time.sleep(0.6)
        mic.begin(recorder.sink, recorder.on_error)
        time.sleep(1.2)
        begun = time.perf_counter()
        assert mic.end_and_wait(2)
        tail_s = time.perf_counter() - begun
    start = _find_exact(clip, recorder.blocks[0])
    assert np.array_equal(recorder.audio, clip[start : start + recorder.audio.size])
    assert recorder.blocks[0].size == ms(400)
    # About 0.4 + 1.2 + 0.4 s; the tail took about its length in real time.
    assert ms(1900) <= recorder.audio.size <= ms(2300)
    assert 0.35 <= tail_s < 1.0


def best_match(haystack: NDArray[np.float32], needle: NDArray[np.float32]) -> int:
    """Offset where ``needle`` fits ``haystack`` with the least squared error."""
    energy = np.convolve(haystack.astype(np.float64) ** 2, np.ones(needle.size), "valid")
    return int(np.argmin(energy - 2 * np.correlate(haystack, needle, "valid")))


def _find_exact(haystack: NDArray[np.float32], needle: NDArray[np.float32]) -> int:
    for start in np.flatnonzero(haystack == needle[0]):
        if np.array_equal(haystack[start : start + needle.size], needle):
            return int(start)
    raise AssertionError("block not found in the clip")


def test_slow_sink_never_blocks_the_callback(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip, speed=8.0)  # a block every 2.5 ms ...
    recorder = Recorder(delay=0.02)  # ... and a sink that takes 20 ms a block
    with Microphone(sd_module=fake, preroll_ms=100, tail_ms=100) as mic:
        began, ended = utterance(mic, fake.streams[0], recorder, ms(500), ms(1500))
        assert recorder.done.wait(10)
        callback_seconds = list(fake.streams[0].callback_seconds)
    assert np.array_equal(recorder.audio, clip[began - ms(100) : ended + ms(100)])
    median = float(np.median(callback_seconds))
    print(f"\ncallback: median {median * 1e3:.2f} ms, slowest {max(callback_seconds) * 1e3:.1f} ms")
    # A callback that waited for the sink would take its 20 ms every time: then the typical
    # one would, whatever hiccups a busy machine adds to a few.
    assert median < 0.01


def test_next_preroll_does_not_repeat_the_last_tail(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    first, second = Recorder(), Recorder()
    with Microphone(sd_module=fake, preroll_ms=400, tail_ms=200) as mic:
        stream = fake.streams[0]
        _, ended = utterance(mic, stream, first, ms(500), ms(800))
        assert first.done.wait(5)
        stream.wait_for(ended + ms(300))
        began = stream.hold()
        mic.begin(second.sink)
        stream.resume()
        assert mic.end_and_wait(5)
    # Only what came after the first utterance's tail is pre-roll: about 100 ms, not 400.
    preroll = began - (ended + ms(200))
    assert ms(100) <= preroll < ms(400)
    assert np.array_equal(second.blocks[0], clip[ended + ms(200) : began])


def test_resamples_a_48k_device_as_if_whole(clip: NDArray[np.float32]) -> None:
    audio48 = resample(clip, RATE, 48000)
    fake = FakeSoundDevice(audio48, rate=48000, supported_rates=(44100, 48000))
    recorder = Recorder()
    with Microphone(sd_module=fake, preroll_ms=300, tail_ms=300) as mic:
        began, ended = utterance(mic, fake.streams[0], recorder, 48 * 1000, 48 * 2000)
        assert recorder.done.wait(5)
        assert mic.stream_rate == 48000
    got = recorder.audio
    assert got.size == ms(300) + (ended - began) // 3 + ms(300)
    padded = np.concatenate((audio48, np.zeros(48000, dtype=np.float32)))
    reference = resample(padded, 48000, RATE)
    offset = best_match(reference, got[:2000])
    assert np.allclose(got, reference[offset : offset + got.size], atol=1e-5)
    # And the 16 kHz result is the clip itself, give or take the filter's ripple.
    assert np.corrcoef(got, clip[offset : offset + got.size])[0, 1] > 0.999


@pytest.mark.parametrize(("source", "block"), [(48000, 960), (44100, 882), (44100, 100)])
def test_stream_resampler_matches_one_shot(source: int, block: int) -> None:
    rng = np.random.default_rng(7)
    signal = rng.standard_normal(source * 2).astype(np.float32) * 0.1
    resampler = StreamResampler(source, RATE)
    streamed = np.concatenate(
        [resampler(signal[i : i + block]) for i in range(0, signal.size, block)]
    )
    whole = resample(signal, source, RATE)
    assert whole.size - streamed.size < 0.01 * RATE  # held back: at most the filter's reach
    assert np.allclose(streamed, whole[: streamed.size], atol=1e-5)


# -- device loss ----------------------------------------------------------------------------


def test_device_lost_mid_utterance_keeps_audio_and_finishes(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    recorder = Recorder()
    with Microphone(sd_module=fake, preroll_ms=400, tail_ms=400) as mic:
        stream = fake.streams[0]
        stream.wait_for(ms(1000))
        began = stream.hold()
        fake.fail, fake.fail_at = "finish", began + 25 * BLOCK
        mic.begin(recorder.sink, recorder.on_error)
        stream.resume()
        assert recorder.error.wait(5)
        assert mic.end_and_wait(1)  # no tail to wait for: the device is gone
        assert mic.lost is not None
    assert np.array_equal(recorder.audio, clip[began - ms(400) : began + 25 * BLOCK])
    assert len(recorder.errors) == 1
    assert "the default microphone (Fake Microphone) was lost" in recorder.errors[0]


def test_device_lost_during_the_tail_still_calls_on_done(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    recorder = Recorder()
    with Microphone(sd_module=fake, preroll_ms=200, tail_ms=400) as mic:
        stream = fake.streams[0]
        stream.wait_for(ms(500))
        began = stream.hold()
        mic.begin(recorder.sink, recorder.on_error)
        stream.resume()
        stream.wait_for(ms(1000))
        ended = stream.hold()
        fake.fail, fake.fail_at = "finish", ended + ms(100)  # 100 ms into the 400 ms tail
        mic.end(recorder.on_done)
        stream.resume()
        assert recorder.done.wait(5)
    assert np.array_equal(recorder.audio, clip[began - ms(200) : ended + ms(100)])
    assert len(recorder.errors) == 1


def test_wedged_device_raising_portaudio_error(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    recorder = Recorder()
    mic = Microphone(sd_module=fake, preroll_ms=400, stall_ms=300)
    mic.open()
    stream = fake.streams[0]
    stream.wait_for(ms(800))
    began = stream.hold()
    fake.fail, fake.fail_at = "raise", began + 10 * BLOCK
    started = time.monotonic()
    mic.begin(recorder.sink, recorder.on_error)
    stream.resume()
    assert recorder.error.wait(5)
    assert 0.3 <= time.monotonic() - started < 2.0
    assert mic.end_and_wait(1)
    mic.close()  # stop() raises PortAudioError; close() must not
    assert recorder.errors == [
        "the default microphone (Fake Microphone) was lost: Device unavailable [PaErrorCode -9985]"
    ]
    assert np.array_equal(recorder.audio, clip[began - ms(400) : began + 10 * BLOCK])


def test_overflow_is_reported_once_and_capture_goes_on(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    fake.fail, fake.fail_at = "status", ms(1200)
    recorder = Recorder()
    with Microphone(sd_module=fake, tail_ms=100) as mic:
        began, ended = utterance(mic, fake.streams[0], recorder, ms(1000), ms(1500))
        assert recorder.done.wait(5)
    assert recorder.errors == [
        "the default microphone (Fake Microphone): input overflow (audio was dropped)"
    ]
    assert np.array_equal(recorder.audio, clip[began - ms(400) : ended + ms(100)])


def test_begin_after_a_loss_reopens_the_device(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    fake.fail, fake.fail_at = "finish", ms(300)
    with Microphone(sd_module=fake) as mic:
        deadline = time.monotonic() + 5
        while mic.lost is None:  # lost while idle: nobody to tell until the next begin()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        fake.fail = None
        recorder = Recorder()
        mic.begin(recorder.sink, recorder.on_error)
        assert len(fake.streams) == 2
        fake.streams[1].wait_for(ms(500))
        assert mic.end_and_wait(5)
        assert mic.lost is None
    # The dead stream's pre-roll was dropped; the new one's audio starts at its sample 0.
    assert np.array_equal(recorder.audio, clip[: recorder.audio.size])
    assert recorder.audio.size >= ms(900)
    assert recorder.errors == []


def test_a_stream_that_goes_quiet_while_idle_is_marked_lost(
    clip: NDArray[np.float32],
) -> None:
    """A server that dies between utterances may never call the finished callback: the
    stream just stops. Idle, that counts as lost after stall_ms, so its owner can see it."""
    fake = FakeSoundDevice(clip)
    fake.fail, fake.fail_at = "raise", ms(200)
    with Microphone(sd_module=fake, stall_ms=300) as mic:
        assert mic.wait_for_audio(5)
        deadline = time.monotonic() + 5
        while mic.lost is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert mic.lost == "no audio for 0.3 s"
        assert mic.level == LEVEL_FLOOR_DB


def test_reopen_failure_raises_and_a_later_begin_retries(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    fake.fail, fake.fail_at = "finish", ms(100)
    with Microphone(sd_module=fake) as mic:
        deadline = time.monotonic() + 5
        while mic.lost is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        fake.fail, fake.open_error = None, FakePortAudioError("Device unavailable")
        with pytest.raises(MicrophoneError, match="Device unavailable"):
            mic.begin(Recorder().sink)
        fake.open_error = None
        recorder = Recorder()
        mic.begin(recorder.sink)
        fake.streams[-1].wait_for(ms(200))
        assert mic.end_and_wait(5)
    assert recorder.audio.size > 0


def test_callbacks_may_end_and_close_but_not_wait(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    before = threading.active_count()
    mic = Microphone(sd_module=fake)
    mic.open()
    closed = threading.Event()
    errors: list[str] = []

    def on_done() -> None:
        mic.close()  # from the delivery thread itself
        closed.set()

    def on_error(message: str) -> None:
        errors.append(message)
        if "lost" in message:
            mic.end(on_done)  # the app ends the utterance when the device goes away

    def sink(block: NDArray[np.float32]) -> None:
        if not errors:
            mic.end_and_wait(1)  # would wait for itself

    fake.streams[0].wait_for(ms(500))
    fake.fail, fake.fail_at = "finish", fake.streams[0].position + ms(200)
    mic.begin(sink, on_error)
    assert closed.wait(5)
    assert errors[0] == "audio sink failed: end_and_wait() from a microphone callback; use end()"
    assert "was lost" in errors[1]
    deadline = time.monotonic() + 5
    while threading.active_count() > before:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_failing_sink_is_reported_and_on_done_still_runs(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    errors: list[str] = []

    def sink(block: NDArray[np.float32]) -> None:
        raise ValueError("pipeline exploded")

    with Microphone(sd_module=fake, tail_ms=40) as mic:
        fake.streams[0].wait_for(ms(500))
        mic.begin(sink, errors.append)
        time.sleep(0.1)
        assert mic.end_and_wait(5)
        recorder = Recorder()  # the thread survived: the next utterance works
        mic.begin(recorder.sink)
        assert mic.end_and_wait(5)
    assert errors == ["audio sink failed: pipeline exploded"]
    assert recorder.audio.size > 0


# -- opening errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("Blue Yeti", "cannot open microphone 'Blue Yeti': No input device matching 'Blue Yeti'"),
        ("fake", "cannot open microphone 'fake': Multiple input devices found for 'fake'"),
        (7, "cannot open microphone #7: Error querying device 7"),
        (1, "cannot open microphone #1: Not an input device: 'Fake Speakers'"),
    ],
)
def test_missing_device_is_a_one_line_error(
    clip: NDArray[np.float32], device: int | str, expected: str
) -> None:
    mic = Microphone(device, sd_module=FakeSoundDevice(clip))
    with pytest.raises(MicrophoneError) as error:
        mic.open()
    assert str(error.value) == expected
    assert not mic.is_open
    assert error.value.exit_code == 3


def test_no_default_input(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    fake.default_input = -1
    with pytest.raises(MicrophoneError, match=r"^cannot open the default microphone: no input"):
        Microphone(sd_module=fake).open()


def test_busy_device_is_a_one_line_error(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    fake.open_error = FakePortAudioError(
        "Error opening InputStream: Device unavailable [PaErrorCode -9985]"
    )
    with pytest.raises(MicrophoneError) as error:
        Microphone("USB", sd_module=fake).open()
    assert str(error.value) == (
        "cannot open microphone 'USB' (Fake USB Headset): "
        "Error opening InputStream: Device unavailable [PaErrorCode -9985]"
    )


def test_real_portaudio_missing_device_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loading PortAudio probes ALSA's pulse plugin; without a runtime folder libpulse would
    # create one under /tmp and a link to it in ~/.config/pulse.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    try:
        import sounddevice
    except OSError as exc:
        pytest.skip(f"PortAudio not installed: {exc}")
    with pytest.raises(MicrophoneError) as error:
        Microphone("no such microphone 4711", sd_module=sounddevice).open()
    assert "\n" not in str(error.value)
    assert str(error.value).startswith("cannot open microphone 'no such microphone 4711': ")


# -- lifecycle ----------------------------------------------------------------------------------


def test_fifty_cycles_reuse_one_stream_and_leak_no_threads(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip, speed=10.0)
    before = threading.active_count()
    with Microphone(sd_module=fake, preroll_ms=100, tail_ms=20) as mic:
        assert threading.active_count() == before + 2  # delivery + the fake's PortAudio
        for _ in range(50):
            recorder = Recorder()
            mic.begin(recorder.sink, recorder.on_error)
            assert mic.end_and_wait(5)
            assert recorder.audio.size >= ms(20)
            assert recorder.errors == []
        assert threading.active_count() == before + 2
    assert len(fake.streams) == 1
    assert threading.active_count() == before


def test_misuse_raises(clip: NDArray[np.float32]) -> None:
    mic = Microphone(sd_module=FakeSoundDevice(clip))
    with pytest.raises(RuntimeError, match="closed"):
        mic.begin(Recorder().sink)
    with mic:
        mic.open()  # already open: nothing happens
        with pytest.raises(RuntimeError, match="without begin"):
            mic.end()
        mic.begin(Recorder().sink)
        with pytest.raises(RuntimeError, match="in progress"):
            mic.begin(Recorder().sink)
        assert mic.end_and_wait(5)
    mic.close()  # twice is fine


def test_close_during_an_utterance(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    before = threading.active_count()
    mic = Microphone(sd_module=fake, tail_ms=5000)
    mic.open()
    recorder = Recorder()
    mic.begin(recorder.sink)
    mic.end(recorder.on_done)
    started = time.monotonic()
    mic.close()  # does not wait out the 5 s tail
    assert time.monotonic() - started < 1
    assert recorder.done.is_set()
    assert threading.active_count() == before


def test_level(clip: NDArray[np.float32]) -> None:
    assert level_dbfs(np.zeros(BLOCK, dtype=np.float32)) == LEVEL_FLOOR_DB
    assert level_dbfs(np.ones(BLOCK, dtype=np.float32)) == 0.0
    sine = np.sin(np.arange(RATE) * 2 * np.pi * 440 / RATE).astype(np.float32)
    assert level_dbfs(sine) == pytest.approx(-3.01, abs=0.01)
    fake = FakeSoundDevice(clip)
    mic = Microphone(sd_module=fake)
    assert mic.level == LEVEL_FLOOR_DB  # nothing heard yet
    with mic:
        fake.streams[0].wait_for(ms(1000))
        position = fake.streams[0].hold()
        expected = level_dbfs(clip[position - BLOCK : position])
        deadline = time.monotonic() + 5
        while mic.level != pytest.approx(expected):  # the delivery thread may lag a little
            assert time.monotonic() < deadline, (mic.level, expected)
            time.sleep(0.01)
        assert -60 < mic.level < 0


def test_list_input_devices(clip: NDArray[np.float32]) -> None:
    fake = FakeSoundDevice(clip)
    fake.default_input = 2
    assert list_input_devices(fake) == [
        InputDevice(0, "Fake Microphone", "Fake API", 16000.0, 1, is_default=False),
        InputDevice(2, "Fake USB Headset", "Fake API", 16000.0, 1, is_default=True),
    ]


# -- a real PulseAudio virtual microphone --------------------------------------------------------


@pytest.mark.parametrize("device", ["pulse", None])
def test_pulseaudio_virtual_microphone_captures_the_whole_clip(
    virtual_mic: VirtualMicrophone,
    clip: NDArray[np.float32],
    device: str | None,
) -> None:
    with Microphone(device) as mic:
        assert mic.wait_for_audio(5)  # the first stream of a process can take ~2 s to start
        for _ in range(3):
            time.sleep(0.5)  # let the pre-roll fill, as between two key presses
            recorder, source, played = capture(virtual_mic, mic)
            if locate(source, clip)[1] > 0.99:
                break
            print("\npaplay underran (a busy machine): the source itself lacks the clip; again")
    audio = recorder.audio
    offset, correlation = locate(audio, clip)
    # The capture path: every sample the source produced while we listened, bit for bit.
    source_offset, _ = locate(source, clip)
    start = source_offset - offset
    assert start >= 0
    assert np.array_equal(to_int16(audio), to_int16(source[start : start + audio.size]))
    # The clip: all of it, the first 100 ms included.
    head = audio[offset : offset + ms(100)]
    report = measure_latency(recorder, offset, clip, played)
    exact = np.array_equal(to_int16(audio[offset : offset + clip.size]), to_int16(clip))
    print(f"\n[{device or 'default'}] correlation {correlation:.6f}, bit-exact {exact}, {report}")
    assert recorder.errors == []
    assert offset + clip.size <= audio.size
    assert correlation > 0.95
    assert np.corrcoef(head, clip[: ms(100)])[0, 1] > 0.95


def capture(
    virtual_mic: VirtualMicrophone,
    mic: Microphone,
) -> tuple[Recorder, NDArray[np.float32], float]:
    """One utterance with the clip played into it; also what the source produced meanwhile."""
    recorder = Recorder()
    since = virtual_mic.recorded_samples()
    mic.begin(recorder.sink, recorder.on_error)
    played = virtual_mic.play(CLIP)
    assert mic.end_and_wait(5)
    time.sleep(0.1)  # let the keeper write out the tail
    return recorder, virtual_mic.recorded(max(0, since - ms(1000))), played


def test_pulseaudio_server_dying_mid_utterance(
    virtual_mic: VirtualMicrophone,
    clip: NDArray[np.float32],
) -> None:
    recorder = Recorder()
    with Microphone("pulse") as mic:
        assert mic.wait_for_audio(5)
        time.sleep(0.3)
        mic.begin(recorder.sink, recorder.on_error)
        _, player = virtual_mic.start_playing(CLIP)
        time.sleep(1.5)
        virtual_mic.kill_server()
        assert recorder.error.wait(5)
        assert mic.end_and_wait(2)
        player.wait(timeout=10)
    assert len(recorder.errors) == 1
    assert "microphone 'pulse' was lost: the audio stream stopped" in recorder.errors[0]
    audio = recorder.audio
    offset, _ = locate(audio, clip[: ms(1000)])
    kept = audio[offset : offset + ms(1000)]
    assert np.corrcoef(kept, clip[: ms(1000)])[0, 1] > 0.95  # the first second survived


def locate(haystack: NDArray[np.float32], needle: NDArray[np.float32]) -> tuple[int, float]:
    """Offset of ``needle`` in ``haystack`` by FFT cross-correlation, and its correlation."""
    assert haystack.size >= needle.size, "captured less audio than the clip"
    size = 1 << int(np.ceil(np.log2(haystack.size + needle.size)))
    spectrum = np.fft.rfft(haystack, size) * np.conj(np.fft.rfft(needle, size))
    lags = np.fft.irfft(spectrum, size)[: haystack.size - needle.size + 1]
    offset = int(np.argmax(lags))
    segment = haystack[offset : offset + needle.size]
    correlation = float(np.corrcoef(segment, needle)[0, 1])
    return offset, correlation


def measure_latency(
    recorder: Recorder, offset: int, clip: NDArray[np.float32], played: float
) -> str:
    """When the clip's first speech reached the sink, counted from paplay's start."""
    speech = int(np.flatnonzero(np.abs(clip) >= 0.01)[0])  # -40 dBFS
    ends = np.cumsum([block.size for block in recorder.blocks])
    arrived = recorder.arrivals[int(np.searchsorted(ends, offset + speech, side="right"))]
    total_ms = 1000 * (arrived - played)
    return (
        f"first speech (clip {1000 * speech / RATE:.0f} ms) reached the sink "
        f"{total_ms:.0f} ms after paplay started: {total_ms - 1000 * speech / RATE:.0f} ms "
        f"of latency; pre-roll before the clip {1000 * offset / RATE:.0f} ms"
    )


def to_int16(audio: NDArray[np.float32]) -> NDArray[np.int16]:
    return np.round(audio * 32768).astype(np.int16)
