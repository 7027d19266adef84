"""A whole dictation through the Qt-free core: a fake sound device replaying a real clip,
the real model, pipeline and history, and an output that records what it was asked to
type."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from tests.support.audio import CLIP, read_wav
from tests.support.dictation_rig import MakeRig
from tests.support.outputs import RecordingOutput
from tests.support.recognition import BIRCH, SENTENCE_WER, assert_begins, assert_heard, words
from voxtray.choices import DictationState, HotkeyMode
from voxtray.config import Settings
from voxtray.dictation.callbacks import Callbacks
from voxtray.errors import VoxtrayError
from voxtray.output import FocusTarget
from voxtray.output.delivery import Delivery
from voxtray.output.tools import ConsentNeeded


def test_push_to_talk_types_the_words_and_keeps_history(dictation_rig: MakeRig) -> None:
    rig = dictation_rig(settings=Settings())
    dictation = rig.dictation
    assert dictation.state is DictationState.READY
    assert dictation.stop() is None  # not listening: nothing to stop
    utterance = rig.say()
    assert_heard(BIRCH, utterance.text, SENTENCE_WER)
    assert rig.output.typed == [utterance.text + " "]
    entry = dictation.history.get(utterance.history_id)
    assert entry is not None
    assert entry.delivered
    assert entry.text == utterance.text
    for stage in ("mic_start", "vad", "stt", "release_to_text", "delivery", "total"):
        assert stage in utterance.timings_ms
    assert rig.states[-3:] == ["listening", "transcribing", "ready"]
    assert dictation.status()["last"]["text"] == utterance.text
    assert dictation.status()["last"]["language"] == "en"  # tiny.en: English only


def test_failed_delivery_loses_nothing(dictation_rig: MakeRig) -> None:
    rig = dictation_rig(output=RecordingOutput(fail=True), settings=Settings())
    utterance = rig.say()
    assert not utterance.delivered
    assert utterance.error == "the target window went away"
    entry = rig.history.get(utterance.history_id)
    assert entry is not None
    assert entry.text == utterance.text != ""
    assert entry.delivery_error == "the target window went away"
    assert rig.dictation.state is DictationState.READY


def test_a_failure_is_kept_in_the_front_ends_words(dictation_rig: MakeRig) -> None:
    """A remedy that is the front end's own (the portal's permission) is worded by it, in
    the history entry and the utterance alike."""
    said = "typing needs the desktop's permission for remote control (it was refused)"

    class Refused(RecordingOutput):
        def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
            raise ConsentNeeded(said)

    def worded(exc: VoxtrayError) -> str:
        return f"{exc}; the front end asks again" if isinstance(exc, ConsentNeeded) else str(exc)

    rig = dictation_rig(output=Refused(), settings=Settings(), callbacks=Callbacks(worded=worded))
    utterance = rig.say()
    assert not utterance.delivered
    assert utterance.error == f"{said}; the front end asks again"
    entry = rig.history.get(utterance.history_id)
    assert entry is not None
    assert entry.text == utterance.text != ""
    assert entry.delivery_error == utterance.error


def test_typing_cut_short_records_what_reached_the_window(dictation_rig: MakeRig) -> None:
    rig = dictation_rig(output=RecordingOutput(stop_after=9), settings=Settings())
    utterance = rig.say()
    assert rig.output.targets[0] is not None  # the window captured at start() was used
    assert utterance.partial
    assert not utterance.delivered
    assert utterance.error is not None
    assert "clipboard" in utterance.error
    entry = rig.history.get(utterance.history_id)
    assert entry is not None
    assert not entry.delivered
    assert entry.delivered_text == utterance.text[:9]
    assert entry.delivery_target == "the test window"


def test_words_spoken_as_the_key_goes_down_are_kept(dictation_rig: MakeRig) -> None:
    """The speaker starts a moment before start() arrives: the pre-roll keeps it."""
    rig = dictation_rig(settings=Settings())
    clip = read_wav(CLIP)
    end = rig.speak(clip)
    rig.fake.streams[-1].wait_for(end - clip.size + 16000 // 10)  # 100 ms already spoken
    assert rig.dictation.start()
    rig.fake.streams[-1].wait_for(end)
    utterance = rig.dictation.stop()
    assert utterance is not None
    # Speech begins 0.1 s into the clip: without the pre-roll "the birch" is lost.
    assert_begins(BIRCH, utterance.text, count=3, wrong=1)


def test_start_stop_is_thread_safe(dictation_rig: MakeRig) -> None:
    dictation = dictation_rig(settings=Settings()).dictation
    results: list[bool] = []
    threads = [threading.Thread(target=lambda: results.append(dictation.start())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 1
    assert dictation.state is DictationState.LISTENING
    dictation.stop()
    assert dictation.state is DictationState.READY


def test_audio_is_kept_and_rerun_gives_the_text_again(dictation_rig: MakeRig) -> None:
    rig = dictation_rig(settings=Settings())
    dictation = rig.dictation
    utterance = rig.say()
    kept = dictation.audio.path(utterance.history_id)
    assert kept.parent == rig.history.path.parent / "history-audio"
    assert kept.stat().st_mode & 0o777 == 0o600
    assert dictation.audio.load(utterance.history_id).size >= read_wav(CLIP).size
    again = dictation.rerun(utterance.history_id)
    assert_heard(BIRCH, again.text, SENTENCE_WER)
    entry = dictation.history.get(again.history_id)
    assert entry is not None
    assert entry.rerun_of == utterance.history_id
    assert entry.text == again.text
    assert rig.output.typed == [utterance.text + " "]  # a re-run types nothing
    assert rig.states[-2:] == ["transcribing", "ready"]


def test_live_text_reaches_callbacks_and_status_while_listening(dictation_rig: MakeRig) -> None:
    partials: list[tuple[str, str]] = []
    statuses: list[dict[str, object]] = []
    rig = dictation_rig(
        speed=1.0,
        callbacks=Callbacks(
            partial=lambda committed, tentative: partials.append((committed, tentative))
        ),
        settings=Settings(),
    )
    dictation = rig.dictation
    assert "partial" not in dictation.status()
    assert dictation.start()
    end = rig.speak()
    deadline = time.monotonic() + 30
    while not partials and time.monotonic() < deadline:
        time.sleep(0.05)
    statuses.append(dictation.status())
    rig.fake.streams[-1].wait_for(end)
    utterance = dictation.stop()
    assert utterance is not None
    assert partials, "no live text while the clip played"
    # The last live text may stop short of the clip's end on a busy machine, so what is
    # checked is that it is this clip's words: most of them, and one at least.
    live = words(" ".join(partials[-1]))
    assert live, partials[-1]
    assert sum(word in words(BIRCH) for word in live) >= len(live) / 2, partials[-1]
    partial = statuses[0]["partial"]
    assert isinstance(partial, dict)
    assert set(partial) == {"committed", "tentative"}
    assert "partial" not in dictation.status()
    committed = [c for c, _ in partials]
    assert all(b.startswith(a) for a, b in itertools.pairwise(committed))


def test_type_as_you_go_types_committed_words_before_the_release(dictation_rig: MakeRig) -> None:
    settings = Settings(hotkey_mode=HotkeyMode.TOGGLE, type_as_you_go=True)
    rig = dictation_rig(speed=1.0, settings=settings)
    output, dictation = rig.output, rig.dictation
    assert dictation.start()
    rig.fake.streams[-1].wait_for(rig.speak())
    time.sleep(1.0)
    before_release = list(output.typed)
    utterance = dictation.stop()
    assert utterance is not None
    assert before_release, "nothing was typed while speaking"
    assert "".join(output.typed) == utterance.text + " "
    assert_heard(BIRCH, utterance.text, SENTENCE_WER)
    entry = dictation.history.get(utterance.history_id)
    assert entry is not None
    assert entry.delivered
    assert entry.text == utterance.text


def test_a_dictation_left_idle_hands_memory_back_and_the_next_still_works(
    dictation_rig: MakeRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("voxtray.dictation.watcher.RELEASE_IDLE_AFTER_S", 1.0)
    rig = dictation_rig(settings=Settings())
    dictation, fake = rig.dictation, rig.fake
    assert dictation._loaded is not None
    pipeline = dictation._loaded.pipeline
    released: list[DictationState] = []
    inner = pipeline.release_idle_memory

    def release() -> None:
        released.append(dictation.state)
        inner()

    monkeypatch.setattr(pipeline, "release_idle_memory", release)
    clip = read_wav(CLIP)
    time.sleep(2.0)
    assert released == []  # nothing was recognised since the load: nothing to hand back
    texts: list[str] = []
    for _ in range(2):
        assert dictation.start()
        end = rig.speak(clip)
        fake.streams[-1].wait_for(end)
        time.sleep(1.5)  # listening past the delay: not idle
        assert released == [DictationState.READY] * len(texts)
        utterance = dictation.stop()
        assert utterance is not None
        texts.append(utterance.text)
        deadline = time.monotonic() + 10
        while len(released) < len(texts) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert released == [DictationState.READY] * len(texts)
    assert len(texts) == 2
    for text in texts:
        assert_heard(BIRCH, text, SENTENCE_WER)


def test_a_reload_keeps_an_open_output_and_quitting_closes_every_one(
    dictation_rig: MakeRig,
) -> None:
    """A model change goes on with the output that holds a session open (the portal's
    would ask the desktop again); an output change makes a new one, and the replaced one is
    closed at quit, when nothing can still type through it."""

    class Held(RecordingOutput):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.made_as, self.closed = name, 0

        def problem(self) -> str | None:
            return None

        def close(self) -> None:
            self.closed += 1

    made: list[Held] = []

    def make(name: str) -> Held:
        made.append(Held(name))
        return made[-1]

    rig = dictation_rig(output_factory=make, settings=Settings())
    first = rig.dictation.output()
    rig.dictation.load(Settings(language="en", preroll_ms=400))
    assert rig.dictation.output() is first
    assert [output.made_as for output in made] == ["auto"]
    rig.dictation.load(Settings(output="clipboard"))
    assert [output.made_as for output in made] == ["auto", "clipboard"]
    assert [output.closed for output in made] == [0, 0]
    rig.close()
    assert [output.closed for output in made] == [1, 1]


def test_an_output_holding_nothing_open_is_chosen_again_at_a_reload(
    dictation_rig: MakeRig,
) -> None:
    """The session may have changed since (a tool installed, the portal up after login)."""
    made: list[RecordingOutput] = []

    def make(name: str) -> RecordingOutput:
        made.append(RecordingOutput())
        return made[-1]

    rig = dictation_rig(output_factory=make, settings=Settings())
    rig.dictation.load(Settings(language="en"))
    assert len(made) == 2
    assert rig.dictation.output() is made[1]
