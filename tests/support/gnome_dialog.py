"""Run by the Python of the GNOME 48 root (PyGObject's Atspi): answer one of GNOME's dialogs
as a screen-reader user would, by the accessible names of its controls.

``python3 gnome_dialog.py TIMEOUT APP CONTROL...``: once a window of the app whose
accessible name contains APP shows every CONTROL, switch each on (a check box) or press it
(a button), in order. Exit 0 when done, 1 when no such dialog came in time.
"""

from __future__ import annotations

import sys
import time


def main(timeout: float, app_name: str, controls: list[str]) -> int:  # pragma: no cover
    import gi

    gi.require_version("Atspi", "2.0")
    from gi.repository import Atspi

    def walk(node, depth=0):  # type: ignore[no-untyped-def]
        if node is None or depth > 40:
            return
        yield node
        for index in range(node.get_child_count()):
            yield from walk(node.get_child_at_index(index), depth + 1)

    def acts(node) -> bool:  # type: ignore[no-untyped-def]
        action = node.get_action_iface()
        return action is not None and action.get_n_actions() > 0

    def find():  # type: ignore[no-untyped-def]
        desktop = Atspi.get_desktop(0)
        for index in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(index)
            if app is None or app_name not in (app.get_name() or ""):
                continue
            found = {}
            for node in walk(app):
                if node.get_role_name() in ("button", "check box") and acts(node):
                    found.setdefault(node.get_name(), node)
            if all(control in found for control in controls):
                return found
        return None

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find()
        if found is not None:
            for control in controls:
                node = found[control]
                checked = node.get_state_set().contains(Atspi.StateType.CHECKED)
                if node.get_role_name() == "button" or not checked:
                    node.get_action_iface().do_action(0)
                time.sleep(0.3)
            return 0
        time.sleep(0.2)
    return 1


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]), sys.argv[2], sys.argv[3:]))
