"""The `modes` setting read line by line: what a line overrides, which app it matches, and a
line that cannot be read left out with one line saying why while the rest still work."""

from __future__ import annotations

import pytest

from voxtray.modes import DEFAULT_MODES, AppIdentity, parse_modes
from voxtray.text.postprocess import TextOptions, process


def test_the_shipped_modes_read_without_a_problem() -> None:
    modes = parse_modes(DEFAULT_MODES)
    assert modes.problems == ()
    assert [mode.name for mode in modes.modes] == ["terminal", "code", "chat"]


@pytest.mark.parametrize(
    ("names", "title", "mode"),
    [
        (("xterm", "xterm"), "bash", "terminal"),
        (("gnome-terminal-server", "gnome-terminal-server"), "", "terminal"),
        (("foot",), "~", "terminal"),
        (("org.kde.konsole",), "", "terminal"),  # KDE's app_id
        (("code", "code"), "main.py - Visual Studio Code", "code"),
        (("jetbrains-pycharm-ce",), "", "code"),
        (("slack",), "Slack", "chat"),
        (("org.telegram.desktop",), "", "chat"),
        (("firefox-esr", "firefox-esr"), "Inbox", None),
        ((), "", None),
    ],
)
def test_the_first_mode_naming_the_app_wins(
    names: tuple[str, ...], title: str, mode: str | None
) -> None:
    found = parse_modes(DEFAULT_MODES).for_app(AppIdentity(names, title))
    assert (found.name if found else None) == mode


def test_a_bad_line_is_left_out_with_one_line_and_the_rest_work() -> None:
    text = "\n".join(
        (
            "mail: app=thunderbird period=on prompt=formal",
            "no colon here",
            "x: app=y output=telepathy",
            "y: app=z capitals=maybe",
            "z: period=off",
            "mail: app=evolution",
            "w: app=a colour=blue",
            "# a comment",
            "chat: app=slack period=off  # after the rule",
        )
    )
    modes = parse_modes(text)
    assert [mode.name for mode in modes.modes] == ["mail", "chat"]
    assert len(modes.problems) == 6
    assert all("\n" not in problem for problem in modes.problems)
    assert modes.problems[0].startswith("mode line 2 left out: it must start with a name")
    assert "output takes type, auto" in modes.problems[1]
    assert "capitals takes on or off, not 'maybe'" in modes.problems[2]
    assert "names no app= or title=" in modes.problems[3]
    assert "'mail' is named twice" in modes.problems[4]
    assert "'colour' is not a mode key" in modes.problems[5]


def test_title_patterns_and_case() -> None:
    modes = parse_modes("docs: app=*office* title=*.odt* capitals=off")
    assert modes.for_app(AppIdentity(("libreoffice",), "Report.ODT - LibreOffice")) is not None
    assert modes.for_app(AppIdentity(("libreoffice",), "Sheet.ods")) is None
    assert modes.for_app(AppIdentity(("gedit",), "Report.odt")) is None


def test_the_summary_says_what_changes() -> None:
    mode = parse_modes(DEFAULT_MODES).modes[1]
    assert mode.summary() == "code (capital at the start off, full stop at the end off)"


@pytest.mark.parametrize(
    ("text", "typed"),
    [
        ("Send the report.", "send the report"),
        ("API keys are rotated.", "API keys are rotated"),
        ("I think so.", "I think so"),
        ("Wait...", "wait..."),
        ("Is it done?", "is it done?"),
    ],
)
def test_no_capital_and_no_stop_for_code(text: str, typed: str) -> None:
    assert process(text, TextOptions(capitals=False, period=False)).text == typed
