"""How the command line words the model store's verify reports, with the commands that
install or repair a model."""

from __future__ import annotations

from voxtray.models.verify import VerifyReport


def verify_line(report: VerifyReport) -> str:
    name = report.name
    if not report.installed:
        return f"{name}: not installed (install with: voxtray models install {name})"
    if not report.problems:
        note = (
            f"; converted by an older Voxtray, `voxtray models install {name} --force` updates it"
            if report.stale
            else ""
        )
        return f"{name}: ok ({report.files_checked} files){note}"
    first = report.problems[0]
    more = f" and {len(report.problems) - 1} more" if len(report.problems) > 1 else ""
    return (
        f"{name}: {first.path} {first.detail}{more}; repair with: "
        f"voxtray models install {name} --force"
    )
