"""Chunked typing, the Delivery it reports, the journal file, and the sway target, without a
desktop (the desktop parts are in tests/e2e/test_delivery_x11.py)."""

from __future__ import annotations

import itertools
import json
import stat
from pathlib import Path

import pytest

from voxtray.desktop.session import DesktopSession
from voxtray.output import DeliveryError, clipboard_note, selection
from voxtray.output.delivery import CHUNK_CHARS, Delivery, chunks, type_in_chunks
from voxtray.output.target import FocusTarget, TargetKind

X11 = DesktopSession.from_env({"DISPLAY": ":9"}, "linux")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "one",
        "hello there, this is a sentence of several words.",
        "a" * 40,
        "  leading and trailing  ",
        "line one\nline two\ttabbed",
        "Grüße, Здравствуйте 😀 ok",
    ],
)
def test_chunks_cover_the_text_in_word_pieces(text: str) -> None:
    pieces = chunks(text)
    assert "".join(pieces) == text
    assert all(0 < len(piece) <= CHUNK_CHARS for piece in pieces)
    # A cut inside a word happens only for words longer than a piece.
    for left, right in itertools.pairwise(pieces):
        if not left[-1].isspace() and not right[0].isspace():
            assert len(left) == CHUNK_CHARS


class Scripted(FocusTarget):
    """A target whose checks answer from a list (a fake for the loop's logic)."""

    def __init__(self, answers: list[str | None]) -> None:
        super().__init__(TargetKind.X11_FOCUS, 7, "window 0x7", X11)
        object.__setattr__(self, "answers", answers)

    def lost(self) -> str | None:
        answers: list[str | None] = self.answers  # type: ignore[attr-defined]
        return answers.pop(0) if answers else None


def test_typing_stops_when_the_target_is_lost_and_spills_the_rest() -> None:
    text = "the quick brown fox jumps over the lazy dog"
    typed: list[str] = []
    spilled: list[str] = []

    def spill(rest: str) -> str | None:
        spilled.append(rest)
        return None

    target = Scripted([None, None, "window 0x7 was closed"])
    delivery = type_in_chunks(text, target, typed.append, spill, "xdotool")
    assert typed == chunks(text)[:2]
    assert delivery.typed_text == "".join(typed)
    assert spilled == [text[len(delivery.typed_text) :]]
    assert delivery.to_clipboard_text == spilled[0]
    assert delivery.reason == "window 0x7 was closed"
    assert delivery.lost_text == ""
    assert delivery.summary() == (
        f"delivered {delivery.typed_chars} of {len(text)} characters to window 0x7; "
        "the rest is on the clipboard (window 0x7 was closed)"
    )


def test_a_failing_clipboard_is_reported_and_nothing_claims_the_rest() -> None:
    target = Scripted(["the focus moved"])
    delivery = type_in_chunks("some words", target, pytest.fail, lambda rest: "no xclip", "x")
    assert delivery.typed_text == ""
    assert delivery.to_clipboard_text == ""
    assert delivery.lost_text == "some words"
    assert delivery.reason == "the focus moved; the clipboard failed too: no xclip"
    assert "could not be put on the clipboard" in delivery.summary()


def test_unknown_target_is_typed_in_one_piece() -> None:
    typed: list[str] = []
    text = "a long text " * 10
    delivery = type_in_chunks(text, FocusTarget.unknown(X11), typed.append, pytest.fail, "x")
    assert typed == [text]
    assert delivery.complete
    assert delivery.summary() == f"delivered {len(text)} characters to the focused window"


def test_a_typing_error_after_some_pieces_says_how_far_it_got() -> None:
    calls: list[str] = []

    def type_chunk(piece: str) -> None:
        calls.append(piece)
        if len(calls) == 2:
            raise DeliveryError("xdotool failed: gone")

    text = "one two three four five six seven"
    with pytest.raises(DeliveryError, match=r"gone \(after \d+ of 33 characters were typed\)"):
        type_in_chunks(text, Scripted([]), type_chunk, pytest.fail, "x")


def test_delivery_of_nothing_is_complete() -> None:
    assert Delivery("", "", "window 0x1", "xdotool").complete


def test_journal_is_private_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "data" / clipboard_note.JOURNAL_FILE
    saved = selection.Saved("image/png", b"\x89PNG\x00\xff")
    note = clipboard_note.write(path, X11, saved, "dictated")
    note = clipboard_note.add_helper(path, note, 4242)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert clipboard_note.read(path) == note
    assert note.saved == saved
    assert note.helper_pid == 4242
    assert "dictated" not in path.read_text()  # only its digest is kept
    clipboard_note.clear(path)
    assert clipboard_note.read(path) is None


class _FakeClipboard(selection.Clipboard):
    def __init__(self, text: str | None) -> None:
        super().__init__(X11, {})
        self.current = text
        self.restored: list[selection.Saved | None] = []

    def text(self) -> str | None:
        return self.current

    def restore(self, saved: selection.Saved | None) -> None:
        self.restored.append(saved)


def test_journal_of_this_process_is_a_paste_in_flight(tmp_path: Path) -> None:
    path = tmp_path / clipboard_note.JOURNAL_FILE
    clipboard_note.write(path, X11, selection.Saved("UTF8_STRING", b"mine"), "dictated")
    clipboard = _FakeClipboard("dictated")
    assert not clipboard_note.recover(path, clipboard)
    assert clipboard.restored == []
    assert path.exists()


def test_journal_from_a_dead_process_is_restored_only_over_our_text(tmp_path: Path) -> None:
    path = tmp_path / clipboard_note.JOURNAL_FILE
    saved = selection.Saved("UTF8_STRING", b"mine")
    for current, expected in (("dictated", [saved]), ("something else", [])):
        note = clipboard_note.write(path, X11, saved, "dictated")
        path.write_text(
            note.to_json().replace(f'"writer_pid": {note.writer_pid}', '"writer_pid": 1')
        )
        clipboard = _FakeClipboard(current)
        assert clipboard_note.recover(path, clipboard) == bool(expected)
        assert clipboard.restored == expected
        assert not path.exists()


def _fake_swaymsg(tmp_path: Path, tree: dict[str, object]) -> dict[str, str]:
    (tmp_path / "tree.json").write_text(json.dumps(tree))
    tool = tmp_path / "swaymsg"
    tool.write_text(f"#!/bin/sh\nexec /bin/cat {tmp_path / 'tree.json'}\n")
    tool.chmod(0o755)
    return {
        "PATH": str(tmp_path),
        "WAYLAND_DISPLAY": "wayland-1",
        "XDG_CURRENT_DESKTOP": "sway",
    }


def _tree(focused: int, windows: dict[int, str]) -> dict[str, object]:
    cons = [
        {"id": ident, "type": "con", "name": name, "focused": ident == focused, "nodes": []}
        for ident, name in windows.items()
    ]
    workspace = {"id": 3, "type": "workspace", "focused": focused == 3, "nodes": cons}
    return {"id": 1, "type": "root", "focused": False, "nodes": [workspace]}


def test_sway_target_from_the_tree(tmp_path: Path) -> None:
    env = _fake_swaymsg(tmp_path, _tree(11, {11: "editor", 12: "terminal"}))
    session = DesktopSession.from_env(env, "linux")
    target = FocusTarget.capture(session, env)
    assert (target.kind, target.ident) == (TargetKind.SWAY, 11)
    assert target.description == 'window "editor" (11)'
    assert target.lost() is None
    _fake_swaymsg(tmp_path, _tree(12, {11: "editor", 12: "terminal"}))
    assert target.lost() == 'the focus moved from window "editor" (11) to window "terminal" (12)'
    _fake_swaymsg(tmp_path, _tree(3, {12: "terminal"}))
    assert target.lost() == 'window "editor" (11) was closed'


def test_sway_without_a_focused_window_or_swaymsg_is_unknown(tmp_path: Path) -> None:
    env = _fake_swaymsg(tmp_path, _tree(3, {}))
    session = DesktopSession.from_env(env, "linux")
    assert FocusTarget.capture(session, env).kind is TargetKind.UNKNOWN
    env["PATH"] = str(tmp_path / "nowhere")
    assert FocusTarget.capture(session, env).kind is TargetKind.UNKNOWN
    gnome = DesktopSession.from_env({**env, "XDG_CURRENT_DESKTOP": "GNOME"}, "linux")
    assert FocusTarget.capture(gnome, env).kind is TargetKind.UNKNOWN
