"""The accessibility layer without a desktop: states, the bus address, the read-back's
outcomes, no typing into a non-text focus, the `atspi` output and its place in "auto",
and the history's `verified` column."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from voxtray.choices import OutputMethod
from voxtray.desktop import atspi
from voxtray.desktop.atspi import Accessibility, Ref, State, Unavailable, Widget
from voxtray.desktop.bus import Deadline
from voxtray.desktop.session import DesktopSession
from voxtray.dictation.keeper import HistoryKeeper
from voxtray.dictation.utterance import Utterance
from voxtray.dictation.verification import DeliveryCheck
from voxtray.history.store import History
from voxtray.inference.pipeline import UtteranceRecord
from voxtray.output import choose_output
from voxtray.output.atspi import AtspiOutput
from voxtray.output.copy_only import CopyOnlyOutput
from voxtray.output.delivery import Delivery
from voxtray.output.target import FocusTarget
from voxtray.output.verify import Field, FieldCheck, Outcome, Verification

TEXT_IFACES = frozenset({"org.a11y.atspi.Text", "org.a11y.atspi.EditableText"})
EDITABLE = frozenset({State.FOCUSED, State.EDITABLE, State.SHOWING, State.MULTI_LINE})
GNOME = {
    "WAYLAND_DISPLAY": "wayland-0",
    "XDG_SESSION_TYPE": "wayland",
    "XDG_CURRENT_DESKTOP": "GNOME",
    "PATH": "/usr/bin",
}


def widget(
    role: str = "text", states: frozenset[State] = EDITABLE, ifaces: frozenset[str] = TEXT_IFACES
) -> Widget:
    return Widget(Ref(":1.9", "/org/a11y/atspi/accessible/2"), "editor", role, "", states, ifaces)


BUTTON = widget("push button", frozenset({State.FOCUSED, State.SHOWING}), frozenset())


class FakeBus(Accessibility):
    """A bus whose focus and field are set by the test; insertion appends at the end."""

    def __init__(self, focus: Widget | None, texts: list[str] | None = None) -> None:
        super().__init__({})
        self.focus = focus
        self.texts = list(texts or [""])
        self.inserted: list[str] = []
        self.takes = True

    def available(self) -> str | None:
        return None

    def focused(self, deadline: Deadline | None = None) -> Widget | None:
        return self.focus

    def text(self, ref: Ref, deadline: Deadline | None = None, timeout: float | None = None) -> str:
        return self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]

    def insert(self, ref: Ref, text: str) -> bool:
        self.inserted.append(text)
        if self.takes:
            self.texts = [self.texts[-1] + text]
        return self.takes


class Spilled(FieldCheck):
    def __init__(self, bus: Accessibility, notices: list[str]) -> None:
        super().__init__({}, notices.append, bus)
        self.clipboard: list[str] = []

    def spill(self, text: str) -> str | None:
        self.clipboard.append(text)
        return None


def test_states_read_both_words() -> None:
    low = (1 << State.FOCUSED) | (1 << State.EDITABLE)
    high = 1 << (State.READ_ONLY - 32)
    assert atspi.states([low, high]) == {State.FOCUSED, State.EDITABLE, State.READ_ONLY}
    assert atspi.states([]) == frozenset()


def test_what_takes_text() -> None:
    assert widget().editable
    assert widget().insertable
    read_only = widget(states=EDITABLE | {State.READ_ONLY})
    assert not read_only.editable
    assert not widget(states=EDITABLE - {State.EDITABLE}).editable
    assert not BUTTON.editable
    assert not BUTTON.has_text
    assert BUTTON.describe() == "push button in editor"


def test_no_session_bus_is_one_line() -> None:
    with pytest.raises(Unavailable, match="no session bus"):
        atspi.bus_address({})
    assert atspi.bus_address({"AT_SPI_BUS_ADDRESS": "unix:path=/x"}) == "unix:path=/x"
    reason = Accessibility({}).available()
    assert reason is not None
    assert "\n" not in reason


EVERYONE = '<allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>'
DEAF = '<allow send_destination="*"/>'  # replies to us are refused: Hello never answers


@contextlib.contextmanager
def private_bus(policy: str) -> Iterator[str]:
    """A session bus with nothing on it (no service activation: no accessibility bus)."""
    if shutil.which("dbus-daemon") is None:
        pytest.skip("dbus-daemon not installed: apt-get install dbus")
    folder = Path(tempfile.mkdtemp(prefix="voxtray-bus-"))
    config = folder / "bus.conf"
    config.write_text(
        '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"'
        ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd"><busconfig>'
        f"<type>session</type><listen>unix:path={folder / 'bus'}</listen><auth>EXTERNAL</auth>"
        f'<policy context="default">{policy}<allow own="*"/></policy></busconfig>'
    )
    daemon = subprocess.Popen(
        ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert daemon.stdout is not None
    address = daemon.stdout.readline().decode().strip()
    try:
        yield address
    finally:
        daemon.terminate()
        daemon.wait(5)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def plain_bus() -> Iterator[str]:
    with private_bus(EVERYONE) as address:
        yield address


def test_a_bus_that_never_answers_costs_a_second_not_a_hang() -> None:
    with private_bus(DEAF) as address:
        started = time.monotonic()
        with pytest.raises(Unavailable, match="does not answer"):
            atspi.bus_address({"DBUS_SESSION_BUS_ADDRESS": address})
        assert time.monotonic() - started < 3


def test_a_session_bus_without_accessibility_says_so(plain_bus: str) -> None:
    with pytest.raises(Unavailable, match="no accessibility bus"):
        atspi.bus_address({"DBUS_SESSION_BUS_ADDRESS": plain_bus})
    found = FieldCheck({"DBUS_SESSION_BUS_ADDRESS": plain_bus}).capture()
    assert found.widget is None
    assert found.reason
    assert "accessibility" in found.reason


def test_said_once(caplog: pytest.LogCaptureFixture) -> None:
    bus = Accessibility({})
    for _ in range(3):
        bus.note_once("no accessibility: a test reason")
    assert [r.message for r in caplog.records].count(
        "no accessibility: a test reason; delivery is not checked"
    ) == 1


def test_verified_missing_unverified() -> None:
    notices: list[str] = []
    bus = FakeBus(widget(), ["hello", "hello", "hello world"])
    check = Spilled(bus, notices)
    found = Field(widget(), "hello")
    assert check.verify(found, " world", timeout=1.0).outcome is Outcome.VERIFIED
    bus.texts = ["hello"]
    missing = check.verify(found, " world", timeout=0.05)
    assert missing.outcome is Outcome.MISSING
    assert check.clipboard == [" world"]
    assert missing.notice
    assert "on the clipboard" in missing.notice
    unknown = check.verify(Field(None, reason="no accessibility: no session bus"), "x")
    assert unknown.outcome is Outcome.UNVERIFIED
    assert "no session bus" in unknown.detail
    # Text that was there before does not count: a second "yes" must arrive.
    bus.texts = ["yes"]
    assert check.verify(Field(widget(), "yes"), "yes", 0.05).outcome is Outcome.MISSING


def test_no_typing_into_a_button() -> None:
    notices: list[str] = []
    check = Spilled(FakeBus(BUTTON), notices)
    refused = check.refuse(Field(BUTTON), "hello", "xdotool")
    assert refused is not None
    assert refused.typed_text == ""
    assert not refused.complete
    assert refused.to_clipboard_text == "hello"
    assert "not a text field" in (refused.reason or "")
    assert check.clipboard == ["hello"]
    assert len(notices) == 1
    assert check.refuse(Field(widget()), "hello", "xdotool") is None
    assert check.refuse(Field(None, reason="no bus"), "hello", "xdotool") is None


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    with History(tmp_path / "history.sqlite3") as store:
        yield store


def keeper_for(history: History) -> HistoryKeeper:
    return HistoryKeeper(history, None, lambda _: None, lambda *_: None)  # type: ignore[arg-type]


def test_outcome_recorded_in_history(history: History) -> None:
    entry = history.add("hi", model="m", engine="e", provider="p", audio_s=1.0, timings={})
    bus = FakeBus(widget(), ["", "hi"])
    checks = DeliveryCheck(keeper_for(history), lambda _: None, Spilled(bus, []))
    utterance = Utterance("hi", entry, UtteranceRecord(text="hi"), {}, True)
    results: list[Verification] = []
    found = Field(widget(), "")
    checks.after(found, Delivery("hi", "hi", "w", "xdotool"), utterance, results.append)
    assert utterance.verified in ("pending", "verified")
    assert checks.wait(5)
    assert utterance.verified == "verified"
    assert results[0].outcome is Outcome.VERIFIED
    assert "verify" in utterance.timings_ms
    stored = history.get(entry)
    assert stored is not None
    assert stored.verified == "verified"


def test_history_migrates_to_a_verified_column(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    with History(path) as store:
        entry = store.add("a", model="m", engine="e", provider="p", audio_s=1.0, timings={})
    with sqlite3.connect(path) as raw:  # back to what a version-4 history held
        for trigger in ("insert", "delete", "update"):
            raw.execute(f"DROP TRIGGER IF EXISTS utterances_fts_{trigger}")
        raw.execute("DROP TABLE IF EXISTS utterances_fts")
        raw.execute("ALTER TABLE utterances DROP COLUMN verified")
        raw.execute("PRAGMA user_version = 4")
    with History(path) as store:
        old = store.get(entry)
        assert old is not None
        assert old.verified is None
        store.mark_verified(entry, "missing")
        marked = store.get(entry)
        assert marked is not None
        assert marked.verified == "missing"


def target() -> FocusTarget:
    return FocusTarget.unknown(DesktopSession.from_env(GNOME, "linux"))


def test_atspi_output_inserts_and_refuses() -> None:
    bus = FakeBus(widget(), ["before "])
    output = AtspiOutput(GNOME, "linux", accessibility=bus)
    spilled: list[str] = []
    output.spill = lambda text: spilled.append(text)  # type: ignore[method-assign, func-returns-value]
    done = output.deliver("hello", target())
    assert done.complete
    assert bus.inserted == ["hello"]
    assert bus.texts == ["before hello"]
    bus.takes = False
    refused = output.deliver("again", target())
    assert not refused.complete
    assert "refused" in (refused.reason or "")
    assert spilled == ["again"]
    bus.focus = BUTTON
    button = output.deliver("there", target())
    assert button.typed_text == ""
    assert "takes no inserted text" in (button.reason or "")


def test_atspi_output_falls_back_without_a_focus() -> None:
    class Fallback:
        name = OutputMethod.CLIPBOARD

        def __init__(self) -> None:
            self.got: list[str] = []

        def available(self) -> bool:
            return True

        def problem(self) -> str | None:
            return None

        def deliver(self, text: str, target: FocusTarget | None = None) -> Delivery:
            self.got.append(text)
            return Delivery(text, text, "clipboard", "clipboard")

    fallback = Fallback()
    output = AtspiOutput(GNOME, "linux", fallback=fallback, accessibility=FakeBus(None))
    output.deliver("hello", target())
    assert fallback.got == ["hello"]


def test_auto_picks_atspi_on_gnome_and_kde_without_ydotool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = ("wtype", "wl-copy", "wl-paste")
    monkeypatch.setattr(
        shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}" if name in found else None
    )
    answer: list[str | None] = [None]
    monkeypatch.setattr(Accessibility, "available", lambda self: answer[0])
    for desktop in ("GNOME", "KDE"):
        chosen = choose_output(env={**GNOME, "XDG_CURRENT_DESKTOP": desktop}, platform="linux")
        assert isinstance(chosen, AtspiOutput)
        assert isinstance(chosen.fallback, CopyOnlyOutput)
    sway = choose_output(env={**GNOME, "XDG_CURRENT_DESKTOP": "sway"}, platform="linux")
    assert sway.name is not OutputMethod.ATSPI
    answer[0] = "no accessibility: no session bus (DBUS_SESSION_BUS_ADDRESS is unset)"
    assert isinstance(choose_output(env=GNOME, platform="linux"), CopyOnlyOutput)


def test_the_choice_is_a_setting() -> None:
    assert "atspi" in OutputMethod.values()
    problem: Callable[[], str | None] = AtspiOutput({}, "win32").problem
    assert problem() == "the accessibility bus (AT-SPI) is for Linux desktops"
