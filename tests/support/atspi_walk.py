"""Run by the system Python (Debian's python3-pyatspi), not the test venv: reads the
accessibility tree of one application the way a screen reader does and prints JSON.

    python3 tests/support/atspi_walk.py tree APP     # windows, and unnamed interactive controls
    python3 tests/support/atspi_walk.py events APP XDOTOOL-ARGS...
        # run `xdotool XDOTOOL-ARGS` and report the controls that got the focus or were
        # selected meanwhile, as a screen reader hears of them (a popup menu is not a child
        # of its application: Qt leaves popups out of the tree and announces them by events)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pyatspi

INTERACTIVE = {
    pyatspi.ROLE_PUSH_BUTTON, pyatspi.ROLE_CHECK_BOX, pyatspi.ROLE_COMBO_BOX,
    pyatspi.ROLE_TEXT, pyatspi.ROLE_ENTRY, pyatspi.ROLE_PASSWORD_TEXT,
    pyatspi.ROLE_SPIN_BUTTON, pyatspi.ROLE_SLIDER, pyatspi.ROLE_LIST, pyatspi.ROLE_TABLE,
    pyatspi.ROLE_MENU_ITEM, pyatspi.ROLE_CHECK_MENU_ITEM, pyatspi.ROLE_RADIO_BUTTON,
    pyatspi.ROLE_TOGGLE_BUTTON, pyatspi.ROLE_PAGE_TAB, pyatspi.ROLE_PROGRESS_BAR,
    pyatspi.ROLE_MENU,
}  # fmt: skip


def application(name: str, timeout: float = 30.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        desktop = pyatspi.Registry.getDesktop(0)
        for i in range(desktop.childCount):
            app = desktop.getChildAtIndex(i)
            if app is not None and app.name.lower() == name.lower():
                return app
        time.sleep(0.5)
    raise SystemExit(f"no application {name!r} on the accessibility bus")


def labels(node: object) -> list[str]:
    """The names of the labels a control is labelled by (its label relation)."""
    return [
        t.name
        for r in node.getRelationSet()
        if r.getRelationType() == pyatspi.RELATION_LABELLED_BY
        for t in (r.getTarget(j) for j in range(r.getNTargets()))
        if t is not None
    ]


def showing(node: object) -> bool:
    return node.getState().contains(pyatspi.STATE_SHOWING)


def walk(node: object, path: str, found: list[dict[str, object]], depth: int = 0) -> None:
    if depth > 40:
        return
    for i in range(node.childCount):
        child = node.getChildAtIndex(i)
        if child is None or not showing(child):
            continue
        role = child.getRole()
        where = f"{path}/{child.getRoleName()}:{child.name}"
        if role in INTERACTIVE:
            labelled = labels(child)
            state = child.getState()
            found.append(
                {
                    "role": child.getRoleName(),
                    "name": child.name,
                    "labelled_by": labelled,
                    "path": where,
                    "focusable": state.contains(pyatspi.STATE_FOCUSABLE)
                    and state.contains(pyatspi.STATE_SENSITIVE),
                    "cells": cells(child) if role == pyatspi.ROLE_TABLE else [],
                }
            )
        if role not in (pyatspi.ROLE_COMBO_BOX, pyatspi.ROLE_TABLE, pyatspi.ROLE_LIST):
            walk(child, where, found, depth + 1)


def cells(table: object, rows: int = 3) -> list[list[str]]:
    """What a screen reader reads in a table's first rows, cell by cell."""
    try:
        grid = table.queryTable()
    except NotImplementedError:
        return []
    return [
        [grid.getAccessibleAt(row, column).name for column in range(grid.nColumns)]
        for row in range(min(rows, grid.nRows))
    ]


def extents(node: object) -> list[int]:
    box = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    return [box.x, box.y, box.width, box.height]


def tree(app_name: str) -> dict[str, object]:
    app = application(app_name)
    windows = []
    for i in range(app.childCount):
        window = app.getChildAtIndex(i)
        if window is None or not showing(window):
            continue
        controls: list[dict[str, object]] = []
        walk(window, window.name, controls)
        windows.append(
            {
                "title": window.name,
                "role": window.getRoleName(),
                "extents": extents(window),
                "controls": controls,
            }
        )
    return {"windows": windows}


def events(app_name: str, actions: list[str]) -> dict[str, object]:
    from gi.repository import GLib

    application(app_name)
    heard: list[dict[str, str]] = []

    def listen(event: object) -> None:
        source = event.source
        try:
            owner = source.getApplication().name
        except Exception:  # a source gone by now
            return
        if owner.lower() == app_name.lower() and event.detail1:
            heard.append(
                {
                    "role": source.getRoleName(),
                    "name": source.name,
                    "label": " ".join(labels(source)),
                    "type": event.type,
                }
            )

    kinds = ("object:state-changed:focused", "object:state-changed:selected")
    pyatspi.Registry.registerEventListener(listen, *kinds)

    def act() -> bool:
        subprocess.run(["xdotool", *actions], check=True)
        GLib.timeout_add(1500, stop)
        return False

    def stop() -> bool:
        pyatspi.Registry.stop()
        return False

    GLib.timeout_add(500, act)
    pyatspi.Registry.start()
    return {"heard": heard}


if __name__ == "__main__":
    command, app_name = sys.argv[1], sys.argv[2]
    result = tree(app_name) if command == "tree" else events(app_name, sys.argv[3:])
    print(json.dumps(result))
