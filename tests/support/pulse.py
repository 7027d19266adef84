"""A PulseAudio virtual microphone for tests on machines without a sound card.

A private PulseAudio server (in a temporary runtime folder, so it never meets a desktop's
server) gets a 16 kHz mono null sink, ``vmic_sink``, and a source, ``vmic``, that remaps the
sink's monitor; ``vmic`` is the default source. Whatever ``paplay`` plays into ``vmic_sink``
comes out of ``vmic``, bit for bit. sounddevice reaches it through ALSA's pulse plugin
(libasound2-plugins) as the devices ``pulse`` and ``default``.

Measured details that matter:

- ``paplay`` needs a small ``--latency-msec`` and the ``parec`` keeper must run, or the first
  0.5-2 s of what is played never reach the source, which looks exactly like a microphone
  clipping the first word. The capture side is not to blame: the keeper records the same.
- 20 ms for ``paplay`` is bit-exact on an idle machine but underruns when the CPUs are busy
  (other tests), which inserts gaps into the "speech"; 50 ms stayed bit-exact with three
  busy loops on two cores, so that is the default here. Even so a busy machine can make
  paplay underrun; the keeper's recording (``recorded()``) shows what the source really
  produced, so a test can tell a playback glitch from a capture bug.

Debian packages: libportaudio2 pulseaudio pulseaudio-utils libasound2-plugins.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.process import stop_process

SINK = "vmic_sink"
SOURCE = "vmic"
RATE = 16000
PACKAGES = "libportaudio2 pulseaudio pulseaudio-utils libasound2-plugins"
_TOOLS = ("pulseaudio", "pactl", "parec", "paplay")
_ALSA_PULSE_PLUGIN = "/usr/lib/*/alsa-lib/libasound_module_pcm_pulse.so"
_START_TIMEOUT_S = 10.0
_RECORDING = "source.s16"
PLAY_LATENCY_MS = 50


@dataclass
class VirtualMicrophone:
    """A running private PulseAudio server with the virtual microphone loaded.

    Attributes:
        runtime_dir: The server's private XDG_RUNTIME_DIR (mode 0700); it also holds the
            keeper's recording of the source, ``source.s16``.
        env: Environment for PulseAudio clients started as subprocesses.
        server: The ``unix:`` address clients connect to.
        daemon: The pulseaudio process.
    """

    runtime_dir: Path
    env: dict[str, str]
    server: str
    daemon: subprocess.Popen[bytes]
    keeper: subprocess.Popen[bytes] | None = None

    def play(self, wav: Path, latency_ms: int = PLAY_LATENCY_MS, timeout: float = 120.0) -> float:
        """Play a WAV file into the microphone; returns when it has been played.

        Returns:
            ``time.perf_counter()`` just before paplay started.
        """
        started = time.perf_counter()
        command = self._paplay(wav, latency_ms)
        subprocess.run(command, env=self.env, check=True, timeout=timeout)
        return started

    def start_playing(
        self, wav: Path, latency_ms: int = PLAY_LATENCY_MS
    ) -> tuple[float, subprocess.Popen[bytes]]:
        """Start playing a WAV file; returns the start time and the paplay process."""
        started = time.perf_counter()
        return started, subprocess.Popen(self._paplay(wav, latency_ms), env=self.env)

    def recorded_samples(self) -> int:
        """How many samples the keeper has recorded from the source so far."""
        return (self.runtime_dir / _RECORDING).stat().st_size // 2

    def recorded(self, since: int = 0) -> NDArray[np.float32]:
        """What the source produced from sample ``since`` on, as float32 in [-1, 1]."""
        raw = np.fromfile(self.runtime_dir / _RECORDING, dtype="<i2", offset=2 * since)
        return (raw.astype(np.float32) / 32768).astype(np.float32)

    def kill_server(self) -> None:
        """Kill the server, as when a USB microphone is pulled or the sound server dies."""
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait(timeout=10)
        stop_process(self.keeper)
        self.keeper = None

    def restart_server(self) -> None:
        """Start the server again at the same address, as a restarted sound server or a
        microphone plugged back in; the keeper's recording starts over."""
        if self.daemon.poll() is None:
            self.kill_server()
        self.daemon = _start_daemon(self.runtime_dir, self.env)
        _wait_until_ready(self.daemon, self.env, self.runtime_dir)
        _pactl(self.env, "set-default-source", SOURCE)
        self.keeper = _start_keeper(self.env, self.runtime_dir / _RECORDING)

    @staticmethod
    def _paplay(wav: Path, latency_ms: int) -> list[str]:
        # Without a small latency paplay buffers ~2 s and the source starts mid-file.
        return ["paplay", f"--latency-msec={latency_ms}", f"--device={SINK}", str(wav)]


@contextlib.contextmanager
def virtual_microphone() -> Iterator[VirtualMicrophone]:
    """Start the server and the ``parec`` keeper; point this process's audio at it.

    Skips the calling test, with the reason, when PulseAudio is not installed or will not
    start. This process's environment gets PULSE_SERVER (and friends) for the duration, and
    PortAudio is reinitialised if it was loaded, so it lists the ``pulse`` device.
    """
    _skip_unless_installed()
    runtime_dir = Path(tempfile.mkdtemp(prefix="voxtray-pulse-"))
    runtime_dir.chmod(0o700)
    client_env = _client_env(runtime_dir)
    env = {**os.environ, **client_env}
    mic = VirtualMicrophone(
        runtime_dir, env, client_env["PULSE_SERVER"], _start_daemon(runtime_dir, env)
    )
    saved = {name: os.environ.get(name) for name in client_env}
    try:
        _wait_until_ready(mic.daemon, env, runtime_dir)
        _pactl(env, "set-default-source", SOURCE)
        mic.keeper = _start_keeper(env, runtime_dir / _RECORDING)
        os.environ.update(client_env)
        _reinitialise_portaudio()
        yield mic
    finally:
        stop_process(mic.keeper)
        stop_process(mic.daemon)
        # Still pointing at the private server: with no address at all libpulse would
        # make itself a runtime folder under /tmp and ~/.config to look for one.
        _reinitialise_portaudio()
        _restore_env(saved)
        shutil.rmtree(runtime_dir, ignore_errors=True)


@pytest.fixture
def virtual_mic() -> Iterator[VirtualMicrophone]:
    """The virtual microphone for one test (starting it takes well under a second)."""
    with virtual_microphone() as mic:
        yield mic


def _skip_unless_installed() -> None:
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    if not glob.glob(_ALSA_PULSE_PLUGIN):
        missing.append("ALSA pulse plugin")
    if ctypes.util.find_library("portaudio") is None:  # how sounddevice looks for it
        missing.append("PortAudio")
    if missing:
        pytest.skip(f"PulseAudio not installed ({', '.join(missing)}): apt-get install {PACKAGES}")


def _client_env(runtime_dir: Path) -> dict[str, str]:
    # An explicit socket and anonymous access: clients then need neither the cookie nor the
    # runtime folder's conventions, and never reach a desktop's server by accident.
    return {
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "PULSE_SERVER": f"unix:{runtime_dir / 'native'}",
        "PULSE_COOKIE": str(runtime_dir / "cookie"),
    }


def _start_daemon(runtime_dir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    # `-n`: no default.pa, so nothing probes for sound cards. As root pulseaudio warns that
    # it is "not intended to be run as root" and works all the same, without --system.
    # --daemonize=no keeps it our child, so the test owns and ends exactly this process;
    # HOME points into the runtime folder so the server's cookie stays out of ~/.config.
    command = [
        "pulseaudio",
        "-n",
        "--daemonize=no",
        "--exit-idle-time=-1",
        "--use-pid-file=no",
        "--log-target=stderr",
        f"--load=module-native-protocol-unix auth-anonymous=1 socket={runtime_dir / 'native'}",
        f"--load=module-null-sink sink_name={SINK} rate={RATE} channels=1 format=s16le",
        f"--load=module-remap-source source_name={SOURCE} master={SINK}.monitor"
        f" rate={RATE} channels=1 format=s16le",
    ]
    log = (runtime_dir / "pulseaudio.log").open("wb")
    with log:
        return subprocess.Popen(
            command, env={**env, "HOME": str(runtime_dir)}, stdout=log, stderr=log
        )


def _wait_until_ready(
    daemon: subprocess.Popen[bytes], env: dict[str, str], runtime_dir: Path
) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            break
        if _pactl(env, "info", check=False).returncode == 0:
            return
        time.sleep(0.05)
    log = (runtime_dir / "pulseaudio.log").read_text(errors="replace").strip().splitlines()
    pytest.skip(f"pulseaudio did not start: {' | '.join(log[-3:]) or 'no output'}")


def _start_keeper(env: dict[str, str], recording: Path) -> subprocess.Popen[bytes]:
    """A recorder that keeps the source running; without it the start of playback is lost.

    It records in the source's own format, so the file holds exactly what the source made.
    """
    command = [
        "parec",
        f"--device={SOURCE}",
        "--latency-msec=10",
        f"--rate={RATE}",
        "--channels=1",
        "--format=s16le",
    ]
    with recording.open("wb") as output:
        keeper = subprocess.Popen(command, env=env, stdout=output)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        listing = _pactl(env, "list", "short", "sources").stdout
        rows = [line.split() for line in listing.splitlines()]
        if any(row[1:2] == [SOURCE] and "RUNNING" in row for row in rows):
            return keeper
        time.sleep(0.02)
    stop_process(keeper)
    raise RuntimeError(f"source {SOURCE} did not start running")


def _pactl(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["pactl", *args], env=env, capture_output=True, text=True, check=check, timeout=10
    )


def _restore_env(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _reinitialise_portaudio() -> None:
    """PortAudio lists ALSA devices once, when it starts: make it look again."""
    sd = sys.modules.get("sounddevice")
    if sd is not None:
        sd._terminate()
        sd._initialize()
