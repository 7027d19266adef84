"""The HUD people read: state, microphone level and live text in full, never past the
screen's free area, one line of how the last dictation went, details a click away."""

from __future__ import annotations

from typing import Any

import pytest

from voxtray.choices import DictationState
from voxtray.dictation.utterance import Utterance
from voxtray.gpu.nvml import GpuMemory
from voxtray.ui.hud import Hud, summary_line

pytest.importorskip("pytestqt")

WORDS = " ".join(f"word{i}" for i in range(1500))  # about two minutes of speech


@pytest.fixture
def hud(qtbot: Any) -> Hud:
    shown = Hud(level_source=lambda: -12.0)
    qtbot.addWidget(shown)
    shown.place()
    shown.show()
    return shown


def test_long_live_text_is_kept_whole_and_the_hud_stays_on_screen(qtbot: Any, hud: Hud) -> None:
    hud.set_state(DictationState.LISTENING)
    hud.show_partial(WORDS, "and the last guess")
    area = hud.screen().availableGeometry()
    assert area.contains(hud.frameGeometry()), (hud.frameGeometry(), area)
    assert "word0 " in hud.partial_label.text()  # nothing cut from the start
    assert "word1499" in hud.partial_label.text()
    assert hud.partial_label.wordWrap()
    bar = hud.partial_scroll.verticalScrollBar()
    assert bar.maximum() > 0  # it scrolls instead of growing
    assert bar.value() == bar.maximum()  # the newest words in view


def test_long_states_are_shown_whole(hud: Hud) -> None:
    detail = "converting: quantising to int8 " + "x" * 200 + " (step 7 of 9)"
    hud.set_state(DictationState.LOADING, detail)
    assert "(step 7 of 9)" in hud.state_label.text()
    assert hud.state_label.wordWrap()
    assert hud.screen().availableGeometry().contains(hud.frameGeometry())


def test_the_level_shows_while_listening(qtbot: Any, hud: Hud) -> None:
    hud.set_state(DictationState.LISTENING)
    assert hud.level.isVisible()
    qtbot.waitUntil(lambda: hud.level.value() == -12)
    hud.set_state(DictationState.TRANSCRIBING)
    assert not hud.level.isVisible()


def test_one_readable_line_and_the_breakdown_a_menu_item_away(qtbot: Any, hud: Hud) -> None:
    from voxtray.inference.pipeline import UtteranceRecord
    from voxtray.ui.tray import TrayMenu

    hud.set_engine("whisper-tiny.en", "ort", "cpu")
    record = UtteranceRecord(model="whisper-tiny.en", engine="ort", provider="cpu")
    timings = {"release_to_text": 312.4, "stt": 250.0, "mic_start": 3.0, "total": 400.0}
    hud.show_utterance(Utterance("hello", 1, record, timings, True))
    assert hud.summary_label.text().startswith("release → text 312 ms · CPU")
    assert "mic 3" not in hud.summary_label.text()
    assert not hud.details.isVisible()
    menu = TrayMenu()
    menu.hud_details_toggled.connect(hud.set_details)
    menu.hud_details_action.trigger()  # one tray-menu item (mnemonic t) away
    assert hud.details.isVisible()
    assert "stt 250" in hud.latency_label.text()
    assert hud.screen().availableGeometry().contains(hud.frameGeometry())
    hud.set_state(DictationState.ERROR, "the microphone was unplugged")
    assert not hud.summary_label.isVisible()  # no stale line under an error


def test_summary_names_the_card_and_its_memory() -> None:
    memory = GpuMemory(0, "NVIDIA H100", 612.0, 2000.0, 81559.0)
    line = summary_line(88.0, "cuda", "", memory)
    assert line == ("release → text 88 ms · CUDA (NVIDIA H100) · GPU mem 612/81559 MiB")
    assert summary_line(None, "", "", None) == "no dictation yet"
    remote = summary_line(150.0, "remote:cuda", "RTX 4090", None)
    assert remote.startswith("release → text 150 ms · server CUDA (RTX 4090)")


def test_hud_shows_the_language_next_to_the_model(qtbot: Any) -> None:
    from voxtray.dictation.utterance import Utterance
    from voxtray.inference.pipeline import UtteranceRecord
    from voxtray.ui.hud import Hud

    hud = Hud()
    qtbot.addWidget(hud)
    hud.set_engine("whisper-base", "ort", "cpu")
    assert hud.engine_label.text() == "whisper-base · ort · provider cpu"
    record = UtteranceRecord(
        text="Guten Morgen", engine="ort", model="whisper-base", provider="cpu", language="de"
    )
    hud.show_utterance(Utterance("Guten Morgen", 1, record, {"total": 300.0}, True))
    assert hud.engine_label.text() == "whisper-base · de · ort · provider cpu"
