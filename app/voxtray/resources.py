"""Files shipped with Voxtray (icons, the self-test clip), wherever it is installed."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
# A development checkout keeps resources/ at the top, two levels above the package (app/voxtray).
_CHECKOUT = _PACKAGE.parents[1]


def resource_path(*parts: str) -> Path:
    """A file under `resources/`: inside the package when bundled or installed as a wheel,
    at the top of a development checkout otherwise."""
    for root in (_PACKAGE / "resources", _CHECKOUT / "resources"):
        candidate = root.joinpath(*parts)
        if candidate.exists():
            return candidate
    return _CHECKOUT.joinpath("resources", *parts)
