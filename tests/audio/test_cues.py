"""Sound cues: the generated tones, playback off the caller's thread with a fake stream,
failures that never reach the caller, and a real playback into a PulseAudio null sink."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.pulse import VirtualMicrophone
from voxtray.audio.backend import PlaybackStream
from voxtray.audio.cues import CUE_RATE, Cue, CuePlayer, tone


def _pitch(samples: NDArray[np.float32]) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(samples.size)))
    return float(np.fft.rfftfreq(samples.size, 1 / CUE_RATE)[spectrum.argmax()])


@pytest.mark.parametrize("cue", list(Cue))
def test_tones_are_short_quiet_and_click_free(cue: Cue) -> None:
    samples = tone(cue, volume=0.3)
    assert samples.dtype == np.float32
    assert 0.1 < samples.size / CUE_RATE < 0.3
    assert 0.2 < np.abs(samples).max() <= 0.3
    assert abs(samples[0]) < 1e-3
    assert abs(samples[-1]) < 1e-3
    assert not samples.flags.writeable
    assert tone(cue, volume=0.3) is samples  # generated once


def test_start_rises_stop_falls_error_is_low() -> None:
    half = int(0.06 * CUE_RATE)
    start, stop, error = tone(Cue.START), tone(Cue.STOP), tone(Cue.ERROR)
    assert _pitch(start[:half]) < _pitch(start[half:])
    assert _pitch(stop[:half]) > _pitch(stop[half:])
    assert _pitch(error) < 300
    assert tone(Cue.START, volume=0.0).max() == 0.0


class FakeStream:
    def __init__(self, log: list[str], gate: threading.Event, written: list[np.ndarray]):
        self.log, self.gate, self.written = log, gate, written

    def start(self) -> None:
        self.log.append("start")

    def write(self, data: NDArray[np.float32]) -> None:
        self.gate.wait(5.0)  # a real device blocks until the sound has gone out
        self.written.append(np.array(data))
        self.log.append("write")

    def stop(self) -> None:
        self.log.append("stop")

    def close(self) -> None:
        self.log.append("close")


class FakeOutput:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.written: list[np.ndarray] = []
        self.opened: list[tuple[int, str | int | None]] = []
        self.gate = threading.Event()
        self.fail: Exception | None = None

    def __call__(self, rate: int, device: str | int | None) -> PlaybackStream:
        self.opened.append((rate, device))
        if self.fail is not None:
            raise self.fail
        return FakeStream(self.log, self.gate, self.written)


def test_play_returns_at_once_and_plays_in_order() -> None:
    output = FakeOutput()
    player = CuePlayer(device="pulse", volume=0.2, open_stream=output)
    # The device stays "busy" (no write ends) until the gate opens: a play() that waited for
    # it would never return.
    assert player.play(Cue.START)
    assert player.play(Cue.STOP)
    assert output.written == []
    output.gate.set()
    assert player.wait_idle()
    assert output.opened == [(CUE_RATE, "pulse")] * 2
    assert output.log == ["start", "write", "stop", "close"] * 2
    first, second = output.written
    assert first.shape[1] == 1
    np.testing.assert_array_equal(first[: tone(Cue.START, 0.2).size, 0], tone(Cue.START, 0.2))
    np.testing.assert_array_equal(second[: tone(Cue.STOP, 0.2).size, 0], tone(Cue.STOP, 0.2))
    player.close()


def test_switched_off_plays_nothing() -> None:
    output = FakeOutput()
    player = CuePlayer(enabled=False, open_stream=output)
    assert not player.play(Cue.START)
    assert player.wait_idle()
    assert output.opened == []


def test_a_full_queue_drops_cues_instead_of_blocking() -> None:
    output = FakeOutput()
    player = CuePlayer(open_stream=output)
    results = [player.play(Cue.START) for _ in range(10)]
    assert results.count(True) <= 4  # one playing, three waiting
    assert not results[-1]
    output.gate.set()
    assert player.wait_idle()
    player.close()


def test_a_broken_device_is_reported_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    output = FakeOutput()
    output.fail = OSError("Error querying device -1")
    player = CuePlayer(open_stream=output)
    for _ in range(3):
        assert player.play(Cue.ERROR)
        assert player.wait_idle()
    assert player.last_error == "OSError: Error querying device -1"
    assert sum("sound cue not played" in r.message for r in caplog.records) == 1  # once
    output.fail = None
    output.gate.set()
    player.play(Cue.START)
    assert player.wait_idle()
    assert player.last_error is None
    assert output.log[-1] == "close"
    player.close()


def test_real_playback_reaches_the_default_output(
    virtual_mic: VirtualMicrophone,
) -> None:
    # The null sink is the only (so the default) output; its monitor is the microphone.
    player = CuePlayer(volume=0.5)
    since = virtual_mic.recorded_samples()
    assert player.play(Cue.START)
    assert player.wait_idle(10.0)
    time.sleep(0.5)
    assert player.last_error is None
    heard = virtual_mic.recorded(since)
    assert heard.size > 0
    assert np.abs(heard).max() > 0.1
    loud = heard[np.abs(heard) > 0.05]
    assert loud.size > 0.05 * 16000  # about the tone's length, resampled to 16 kHz
    player.close()
