"""`voxtray doctor`: how text and the hotkey reach this desktop, and the one-time consent.

It names the output `auto` picks here and why, and on GNOME and KDE Wayland asks the
desktop for its keyboard (the RemoteDesktop portal) so the user answers the question once,
now, rather than at the first dictation; it says in one line what the question is for and
whether it was granted. Exit codes: 0 typing works here; 9 (NO_DESKTOP) nothing can type
(no desktop, or the permission was refused: the text will be left on the clipboard).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from voxtray.desktop.consent import WHY_ASK
from voxtray.errors import ExitCode

if TYPE_CHECKING:
    from voxtray.cli.args import Subcommands


@dataclass
class Report:
    """What `voxtray doctor` found."""

    desktop: str
    output: str | None
    output_reason: str
    output_problem: str | None = None
    portal_keyboard: str | None = None
    """None when the portal lends a keyboard here, else why not."""
    consent: str = "unasked"
    consent_seconds: float | None = None
    global_shortcuts: str | None = None
    """None when the desktop binds push-to-talk through its portal, else why not."""

    @property
    def types(self) -> bool:
        return self.output is not None and self.consent != "denied"


def register(commands: Subcommands) -> None:
    """Register `voxtray doctor [--json] [--no-ask]`."""
    doctor = commands.add_parser(
        "doctor", help="how text and the hotkey reach this desktop; ask for typing's consent"
    )
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.add_argument(
        "--no-ask", action="store_true", help="do not ask the desktop for its keyboard now"
    )
    doctor.set_defaults(handler=run)


def examine(env: dict[str, str], ask: bool) -> Report:
    """Look at the session, and ask for the consent if the output needs it and ``ask``."""
    from voxtray.desktop.session import DesktopSession
    from voxtray.hotkeys.portal_listener import shortcuts_problem
    from voxtray.output.chooser import choose_output
    from voxtray.output.explain import explain
    from voxtray.output.portal_keys import PortalKeysOutput
    from voxtray.output.tools import DeliveryError

    session = DesktopSession.from_env(env, sys.platform)
    report = Report(f"{session.desktop.value} ({session.server.value})", None, "")
    portal = PortalKeysOutput(env)
    report.portal_keyboard = portal.problem()
    report.global_shortcuts = shortcuts_problem(env) if session.wayland else "not a Wayland session"
    report.consent = str(portal.consent())
    try:
        output = choose_output("auto", env)
    except DeliveryError as exc:
        report.output_problem = str(exc)
        return report
    report.output, report.output_reason = str(output.name), explain(output)
    if isinstance(output, PortalKeysOutput) and ask:
        grant = output.keyboard.start()
        output.close()
        report.consent = "granted" if grant.granted else "denied"
        report.consent_seconds = round(grant.seconds, 3)
        if not grant.granted:
            report.output_problem = grant.reason
    return report


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if not args.json and not args.no_ask:
        print(WHY_ASK, flush=True)
    report = examine(env, ask=not args.no_ask)
    if args.json:
        sys.stdout.write(json.dumps(asdict(report) | {"types": report.types}) + "\n")
    else:
        print(format_report(report))
    return int(ExitCode.OK if report.types else ExitCode.NO_DESKTOP)


def format_report(report: Report) -> str:
    lines = [f"desktop: {report.desktop}"]
    if report.output is None:
        lines.append(f"typing: none ({report.output_problem})")
    else:
        lines.append(f"typing: {report.output} - {report.output_reason}")
    keyboard = report.portal_keyboard or "available"
    lines.append(f"desktop portal keyboard: {keyboard}")
    taken = f" in {report.consent_seconds:g} s" if report.consent_seconds is not None else ""
    lines.append(f"permission for remote control: {report.consent}{taken}")
    if report.consent == "denied":
        lines.append("  the text will be left on the clipboard; run `voxtray doctor` to ask again")
    lines.append(f"push-to-talk through the portal: {report.global_shortcuts or 'available'}")
    return "\n".join(lines)
