"""Run by the system Python (pyatspi): answer GNOME's remote-desktop dialog, as a
screen-reader user would, once the dialog shows.

``python3 portal_consent.py TIMEOUT``: switch on "Allow remote interaction" (the caller then
presses Alt+S); ``python3 portal_consent.py TIMEOUT refuse``: press "Cancel". Exit 0 when
done, 1 when no dialog came.
"""

from __future__ import annotations

import sys
import time


def main(timeout: float, refuse: bool = False) -> int:  # pragma: no cover - system Python
    import pyatspi

    def walk(node, depth=0):  # type: ignore[no-untyped-def]
        if node is None or depth > 40:
            return
        yield node
        for index in range(node.childCount):
            yield from walk(node.getChildAtIndex(index), depth + 1)

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for app in pyatspi.Registry.getDesktop(0):
            if app is None or "xdg-desktop-portal" not in (app.name or ""):
                continue
            for node in walk(app):
                name = (node.name or "").replace("_", "").lower()
                if refuse and node.getRoleName() == "push button" and name.startswith("cancel"):
                    node.queryAction().doAction(0)
                    return 0
                if refuse:
                    continue
                if node.getRoleName() == "check box" and "remote" in name:
                    if not node.getState().contains(pyatspi.STATE_CHECKED):
                        node.queryAction().doAction(0)
                    time.sleep(0.3)
                    return 0
        time.sleep(0.1)
    return 1


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]), sys.argv[2:] == ["refuse"]))
