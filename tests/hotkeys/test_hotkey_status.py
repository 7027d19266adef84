"""What `voxtray status` says of the hotkey, and how the portal backend keeps that true: a
binding answered for a session since replaced changes nothing, and GNOME 48's answer code
counts only with the shortcut bound to a key. The portal itself is faked here: the real
bindings are `tests/e2e/test_gnome48_shortcuts.py` and `tests/e2e/test_portal_shortcuts.py`."""

from __future__ import annotations

import threading

from voxtray.cli.control import hotkey_line
from voxtray.desktop.portal import Answer, PortalError
from voxtray.hotkeys.base import hotkey_fields
from voxtray.hotkeys.keyboard_listener import KeyboardBackend
from voxtray.hotkeys.no_listener import NoBackend
from voxtray.hotkeys.portal_listener import (
    NOT_BOUND,
    SHORTCUT_ID,
    PortalShortcutBackend,
    _answered_bound,
)

BOUND = {"shortcuts": [(SHORTCUT_ID, {"trigger_description": ("s", "Press <Control><Alt>space")})]}
SHORTCUT = (SHORTCUT_ID, {"description": ("s", "Voxtray: hold to dictate")})
LISTED = {"shortcuts": [SHORTCUT]}


def test_status_shows_the_backend_and_the_desktops_binding() -> None:
    assert hotkey_fields(None) == {"backend": "none"}
    assert hotkey_fields(NoBackend({}, "linux")) == {"backend": "none"}
    assert hotkey_line(hotkey_fields(KeyboardBackend({}, "linux"))) == "keyboard"
    portal = PortalShortcutBackend({}, "linux")
    asking = hotkey_fields(portal)
    assert asking == {"backend": "portal", "bound": False, "trigger": "", "problem": None,
                      "binds": 0}  # fmt: skip
    assert hotkey_line(asking).startswith("portal, waiting for the desktop to bind it")
    portal._session = "/session/1"
    portal._bound(BOUND)
    assert hotkey_line(hotkey_fields(portal)) == (
        "portal, bound by the desktop (Press <Control><Alt>space)"
    )
    portal.bind_problem = NOT_BOUND
    assert hotkey_line(hotkey_fields(portal)) == f"portal, not bound: {NOT_BOUND}"


def test_only_an_answer_that_binds_to_a_key_counts() -> None:
    assert _answered_bound(Answer(0, BOUND))
    assert _answered_bound(Answer(0, LISTED))  # Plasma binds before it names a key
    assert _answered_bound(Answer(2, BOUND))  # GNOME 48's answer to a binding it made
    assert not _answered_bound(Answer(2, LISTED))
    assert not _answered_bound(Answer(1, {}))  # cancelled
    assert not _answered_bound(Answer(2, {}))


class _SlowLink:
    """A portal connection whose BindShortcuts answers only when told to."""

    def __init__(self, answer: Answer | None) -> None:
        self.answer = answer
        self.go = threading.Event()

    def request(self, *args: object) -> Answer:
        self.go.wait(5)
        if self.answer is None:
            raise PortalError("the portal did not answer BindShortcuts within 60 s")
        return self.answer


def test_an_answer_for_a_replaced_session_changes_nothing() -> None:
    """A question still open when the key was bound again (a new hotkey, a portal restart)
    is answered late: its failure must not mark the new binding unbound, nor its success
    count for it."""
    for late in (None, Answer(0, BOUND)):
        portal = PortalShortcutBackend({}, "linux")
        link = _SlowLink(late)
        asking = threading.Thread(target=portal._ask_to_bind, args=(link, "/session/old", SHORTCUT))
        portal._session = "/session/old"
        asking.start()
        portal._session = "/session/new"
        portal._bound(BOUND)
        link.go.set()
        asking.join(5)
        assert portal.binding().bound
        assert (portal.binds, portal.bind_problem) == (1, None)


def test_a_failed_answer_for_the_current_session_is_said() -> None:
    portal = PortalShortcutBackend({}, "linux")
    portal._session = "/session/now"
    link = _SlowLink(Answer(2, LISTED))
    link.go.set()
    portal._ask_to_bind(link, "/session/now", SHORTCUT)  # type: ignore[arg-type]
    assert not portal.binding().bound
    assert portal.bind_problem == NOT_BOUND
