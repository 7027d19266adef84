"""The soak run's rig: an InferenceWorker on its QThread driving a real Dictation that a
fake microphone feeds with real clips, and the process's resources sampled after each cycle."""

from __future__ import annotations

import csv
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from PySide6.QtCore import QCoreApplication, Qt

from tests.support.audio import SPEECH_DIR, read_wav
from tests.support.models import ensure_installed
from tests.support.outputs import RecordingOutput
from tests.support.sounddevice import FakeSoundDevice, FakeStream
from voxtray.bench.runner import rss_mb
from voxtray.choices import DictationState, Engine, Precision, Provider
from voxtray.config import Settings
from voxtray.dictation.session import Dictation
from voxtray.dictation.utterance import Utterance
from voxtray.history.store import History
from voxtray.models.store import ModelStore
from voxtray.output.base import TextOutput

RATE = 16000
# Short clips that whisper-tiny.en gets right (WER <= 0.2); one of them (5.4 s) splits
# into two VAD segments, so recognition also runs while audio is still arriving.
CLIP_IDS = (
    "harvard_sb_example1",
    "ls_1089-134691-0000",
    "ljspeech_LJ002-0020",
    "ljspeech_LJ002-0035",
    "timit_ldc93s1",
    "ls_260_fw_right",
    "ls_1089-134691-0001",
)
SETTINGS = Settings(
    model="whisper-tiny.en", engine=Engine.ORT, provider=Provider.CPU, precision=Precision.INT8
)
SPEED = 16.0  # audio plays this many times faster than real time
WARMUP = 20  # cycles before thread, descriptor and reference counts must hold still
CYCLE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Clip:
    id: str
    audio: NDArray[np.float32]
    reference: str


def load_clips(ids: tuple[str, ...] = CLIP_IDS) -> list[Clip]:
    with (SPEECH_DIR / "manifest.tsv").open(encoding="utf-8", newline="") as stream:
        rows = {
            row["id"]: row for row in csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE)
        }
    return [Clip(i, read_wav(SPEECH_DIR / rows[i]["wav"]), rows[i]["reference"]) for i in ids]


# -- resources --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """This process's resources at one moment."""

    rss_mb: float
    threads: int  # Python threads (threading.active_count)
    native_threads: int  # kernel tasks: ORT pools, Qt, the fake PortAudio thread, ...
    fds: int
    # References to the singletons: a C extension that returns them without a new
    # reference makes these fall until the interpreter aborts ("deallocating None").
    # Python 3.12+ makes them immortal, with a huge constant count.
    none_refs: int
    true_refs: int
    false_refs: int

    @staticmethod
    def now() -> Sample:
        return Sample(
            rss_mb=rss_mb(),
            threads=threading.active_count(),
            native_threads=len(os.listdir("/proc/self/task")),
            fds=len(os.listdir("/proc/self/fd")),
            none_refs=sys.getrefcount(None),
            true_refs=sys.getrefcount(True),
            false_refs=sys.getrefcount(False),
        )

    @property
    def fewest_refs(self) -> int:
        return min(self.none_refs, self.true_refs, self.false_refs)


# -- the fake microphone's audio ---------------------------------------------------------


class ClipFeed:
    """Stands in for ``FakeSoundDevice.audio``: one clip at an absolute sample, silence
    everywhere else. The fake stream's position grows for ever; an array that kept all of
    it (as tests.dictation.test_dictation.speak does) would itself grow by ``SPEED`` x 64 kB/s."""

    def __init__(self) -> None:
        self.base = 0
        self.clip = np.zeros(0, dtype=np.float32)

    def place(self, base: int, clip: NDArray[np.float32]) -> int:
        self.base, self.clip = base, clip
        return base + clip.size

    def __getitem__(self, key: slice) -> NDArray[np.float32]:
        start, stop = int(key.start), int(key.stop)
        out = np.zeros(stop - start, dtype=np.float32)
        first, last = max(start, self.base), min(stop, self.base + self.clip.size)
        if first < last:
            out[first - start : last - start] = self.clip[first - self.base : last - self.base]
        return out


# -- the rig: worker thread, dictation, fake microphone ---------------------------------


class Collector:
    """What the worker reported, appended on the worker's thread (direct connections)."""

    def __init__(self) -> None:
        self.utterances: deque[Utterance] = deque()
        self.warnings: list[str] = []
        self.loaded = False


class WorkerRig:
    """An InferenceWorker on its QThread driving a real Dictation fed by a fake device."""

    def __init__(self, store: ModelStore, workdir: Path, speed: float = SPEED) -> None:
        from voxtray.ui.worker import InferenceWorker, start_worker

        self.app = QCoreApplication.instance() or QCoreApplication([])
        self.store = store
        self.feed = ClipFeed()
        self.fake = FakeSoundDevice(np.zeros(0, np.float32), speed=speed)
        self.fake.audio = self.feed  # type: ignore[assignment]  # sliced like an array
        self.output = RecordingOutput()
        self.history = History(workdir / "history.sqlite3")
        self.got = Collector()
        self.worker = InferenceWorker(self._make_dictation, SETTINGS)
        self._connect()
        self.thread = start_worker(self.worker)
        self.wait_until(lambda: self.got.loaded, 300.0, "the model to load")
        self._bound_fake_stream()

    def _make_dictation(self, callbacks: Any) -> Dictation:
        return Dictation(
            self.store,
            self.history,
            callbacks,
            sd_module=self.fake,
            output_factory=lambda name: cast(TextOutput, self.output),  # records, types nothing
        )

    def _connect(self) -> None:
        # Direct: the worker thread appends to thread-safe containers, so the main thread
        # needs no event loop. (Pumping one with processEvents() would itself drop a
        # reference to None per call under PySide6 6.12 on CPython 3.11.)
        direct = Qt.ConnectionType.DirectConnection
        self.worker.utterance.connect(self.got.utterances.append, direct)
        self.worker.warning.connect(self.got.warnings.append, direct)
        self.worker.loaded.connect(lambda loaded: setattr(self.got, "loaded", True), direct)

    def _bound_fake_stream(self) -> None:
        # The fake records every callback's duration; keep only the last few.
        self.stream.callback_seconds = deque(maxlen=64)  # type: ignore[assignment]

    @property
    def stream(self) -> FakeStream:
        return self.fake.streams[-1]

    @property
    def dictation(self) -> Dictation:
        return self.worker.dictation

    @staticmethod
    def wait_until(done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout:g} s for {what}")
            time.sleep(0.001)

    def press(self) -> None:
        if not self.worker.start():
            raise RuntimeError(f"start() refused in state {self.dictation.state}")

    def speak(self, clip: NDArray[np.float32]) -> int:
        """The fake microphone hears ``clip`` from the next block on; returns its end."""
        end = self.feed.place(self.stream.hold(), clip)
        self.stream.resume()
        return end

    def hear_silence(self, samples: int) -> None:
        self.stream.wait_for(self.stream.position + samples)

    def release(self) -> Utterance:
        self.worker.stop_requested.emit()
        self.wait_until(self._settled, CYCLE_TIMEOUT_S, "the utterance")
        return self.got.utterances.popleft()

    def _settled(self) -> bool:
        return bool(self.got.utterances) and self.dictation.state is DictationState.READY

    def close(self) -> None:
        self.thread.quit()
        self.thread.wait(10_000)
        self.dictation.close()


def build_rig(store: ModelStore, workdir: Path, speed: float = SPEED) -> WorkerRig:
    for name in (SETTINGS.model, store.catalog.default_vad):
        ensure_installed(store, name)
    return WorkerRig(store, workdir, speed)
