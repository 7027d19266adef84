"""The sounddevice module and the tests' stand-in both are the `AudioBackend` Voxtray uses:
checked here at run time, and by mypy wherever the stand-in is passed as one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.sounddevice import FakeSoundDevice
from voxtray.audio.backend import AudioBackend, Restartable
from voxtray.audio.cues import CUE_RATE, Cue, CuePlayer, tone
from voxtray.audio.inputs import list_input_devices, reinitialise_portaudio


def test_sounddevice_has_everything_voxtray_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loading PortAudio probes ALSA's pulse plugin; without a runtime folder libpulse would
    # create one under /tmp and a link to it in ~/.config/pulse.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    try:
        import sounddevice
    except OSError as exc:
        pytest.skip(f"PortAudio not installed: {exc}")
    assert isinstance(sounddevice, AudioBackend)
    assert isinstance(sounddevice, Restartable)
    assert issubclass(sounddevice.PortAudioError, Exception)


def test_the_stand_in_is_a_backend() -> None:
    fake: AudioBackend = FakeSoundDevice(np.zeros(16000, np.float32))
    assert isinstance(fake, AudioBackend)
    assert not isinstance(fake, Restartable)
    reinitialise_portaudio(fake)  # a backend that cannot restart is left as it is
    assert [device.name for device in list_input_devices(fake)] == [
        "Fake Microphone",
        "Fake USB Headset",
    ]


def test_the_stand_in_plays_cues() -> None:
    fake = FakeSoundDevice(np.zeros(16000, np.float32))
    player = CuePlayer(
        open_stream=lambda rate, device: fake.OutputStream(
            samplerate=rate, channels=1, dtype="float32", device=device
        )
    )
    assert player.play(Cue.START)
    assert player.wait_idle()
    player.close()
    assert player.last_error is None
    assert len(fake.played) == 1
    np.testing.assert_array_equal(fake.played[0][: tone(Cue.START).size], tone(Cue.START))
    assert fake.played[0].size == tone(Cue.START).size + CUE_RATE // 50
